package io.ferrite.tx;

/**
 * The tx face's wire protocol (little-endian, {@link io.ferrite.kernel.proto.Wire}).
 *
 * <h2>Region map: the master extension, service {@value #MASTER_SERVICE} on the master</h2>
 *
 * <pre>
 *  NEW_REGION   i32 nearServer (-1: any)             → placement
 *  GET_REGION   i32 region                           → placement
 *  OPENED       i32 region (SERVER role: its primary) → (empty)
 *  END_FILL     i32 region, i32 primary, i32 server, i64 since (SERVER role) → u8 1 backup now, 0 no
 *  GET_PLACEMENT i32 region                          → placement, i32 m, m × (i32 server, i64 since)
 *
 *  placement = i32 region, i32 primary, i32 n, n × i32 backup, u8 opened, i64 epoch
 * </pre>
 *
 * {@code epoch} is bumped on every change of the placement (a backup promoted, a copy dropped, a
 * copy added in state FILLING, a filled copy made a backup). GET_PLACEMENT (memory servers) also
 * lists the copies being filled, each with the epoch it was added at ({@code since}); END_FILL
 * makes one a backup if {@code primary} is still the primary and the fill is the one added at
 * {@code since}.
 *
 * <p>{@code opened}: the primary made the region's memory (OPENED, journaled) before any object was
 * allocated in it. A primary asked for an opened region it does not hold lost it (it restarted:
 * DRAM regions do not survive a process) and answers {@code DATA_LOST} rather than serve an empty
 * region in its place; with backups, the master promotes one instead (docs/TX.md, "Replication").
 *
 * <pre>
 * </pre>
 *
 * <h2>Objects and commits: the memory-server service, service {@value #SERVER_SERVICE}</h2>
 *
 * <pre>
 *  OPEN_REGION  i32 region                           → i32 fabricRegion, i64 readKey, i64 length
 *  ALLOC        i32 region, i32 size                 → i64 offset, i64 incarnation, i64 version
 *  LOCK         i64 txid, i32 deciderRegion, writes  → u8 status [, u8 durable]
 *  COMMIT       i64 txid, i32 deciderRegion, i32 n, n × i32 region → u8 status
 *               (the regions written besides the decider region: its commit is pinned for them)
 *  ABORT        i64 txid                             → u8 status (always OK)
 *  COMMIT_LOCAL i64 txid, writes, reads              → u8 status
 *  OUTCOME      i64 txid, i32 deciderRegion          → u8 status (SERVER role only)
 *  OPEN_COPY    i32 region                           → as OPEN_REGION, of this server's backup copy
 *  REPLICATE    i32 region, i64 epoch, u8 record, body → (empty) (SERVER role: primary → backup)
 *  UNRESOLVED   i32 region, i32 n, n × i64 txid      → i32 m, m × i64 txid (SERVER role: those
 *               the region still holds locked; the decider unpins the others)
 *
 *  records: 1 LOCK   i64 txid, i32 deciderRegion, writes (of this region)
 *           2 LOCAL  writes (a single-server commit, decided: applied at once)
 *           3 COMMIT i64 txid     4 ABORT i64 txid
 *           5 DECIDE i64 txid, u8 commit, i32 n, n × i32 region (the decider region's decision,
 *                    pinned until those regions resolved it)
 *           6 OPEN   (the primary made the region: the backup makes its copy)
 *           7 FILL_BEGIN i64 since (a new copy: made empty, replacing any older one)
 *           8 FILL_STATE i32 n, n × (i64 slab, i32 lines), i32 m, m × (i64 txid, i32 decider,
 *                        writes), i32 k, k × (i64 txid, u8 commit, i32 p, p × i32 region)
 *                        (slabs, LOCK and DECIDE records, with their pins)
 *           9 FILL_OBJECTS i32 n, n × (i64 offset, i32 lines, u8 live, lines × 64 bytes image)
 *          10 UNPIN  i32 n, n × i64 txid (pins of the decider region released)
 *
 *  writes = i32 n, n × (ptr, i64 expectedVersion, u8 kind (1 write, 2 free), bytes value)
 *  reads  = i32 n, n × (ptr, i64 version)
 *  ptr    = i32 region, i64 offset, i32 size, i64 incarnation
 * </pre>
 *
 * A server that is not the primary of a region it is asked about answers {@code MOVED}: the
 * client's map is stale, it refetches from the master and retries once.
 */
public final class TxProtocol {
  /** The master extension's service id. */
  public static final int MASTER_SERVICE = 47;

  /** The memory-server service's id. */
  public static final int SERVER_SERVICE = 47;

  public static final int NEW_REGION = 1;
  public static final int GET_REGION = 2;
  public static final int OPENED = 3;
  public static final int END_FILL = 4;
  public static final int GET_PLACEMENT = 5;

  public static final int OPEN_REGION = 1;
  public static final int ALLOC = 2;
  public static final int LOCK = 3;
  public static final int COMMIT = 4;
  public static final int ABORT = 5;
  public static final int COMMIT_LOCAL = 6;
  public static final int OUTCOME = 7;
  public static final int OPEN_COPY = 8;
  public static final int REPLICATE = 9;

  /**
   * Truncation (docs/TX.md "Truncation"), decider → a participant region's primary, SERVER role:
   * which of these committed transactions does the region still hold unresolved (a LOCK not yet
   * applied durably)? The others' pins are released at the decider.
   */
  public static final int UNRESOLVED = 10;

  /** REPLICATE record types. */
  public static final int REC_LOCK = 1;

  public static final int REC_LOCAL = 2;
  public static final int REC_COMMIT = 3;
  public static final int REC_ABORT = 4;
  public static final int REC_DECIDE = 5;
  public static final int REC_OPEN = 6;
  public static final int REC_FILL_BEGIN = 7;
  public static final int REC_FILL_STATE = 8;
  public static final int REC_FILL_OBJECTS = 9;

  /** The decider region's pins released (docs/TX.md "Truncation"): i32 n, n × i64 txid. */
  public static final int REC_UNPIN = 10;

  /**
   * Function shipping ({@link TxFunction}): {@code str function, FatPointer address, bytes
   * argument} → {@code u8 status, bytes output}. Opcodes 32 and up are kept for calls beside the
   * commit protocol.
   */
  public static final int SHIP = 32;

  /** Statuses of LOCK, COMMIT, COMMIT_LOCAL and OUTCOME. */
  public static final int OK = 0;

  /** An object of the write set is locked by another transaction. */
  public static final int LOCKED = 1;

  /** An object's version is not the one the transaction read (or it was freed since). */
  public static final int CHANGED = 2;

  /** The transaction was aborted at this server (its lock lease lapsed) before it committed. */
  public static final int ABORTED = 3;

  /** OUTCOME: the decider has not decided yet (its lease has not lapsed). */
  public static final int PENDING = 4;

  /**
   * LOCK OK's second byte: 1 if this LOCK survives the loss of the participant's process: each
   * region of the LOCK's writes either had a backup when LOCK answered, each having acknowledged
   * the LOCK record (or taken it in a fill's state), or has no backup and its LOCK record, with the
   * new values, is in the participant's own log on disk (written before the answer; under {@code
   * tx.log.sync=always} fsynced). A loss of this primary then leaves the transaction locked at a
   * promoted backup, or at the region rebuilt from that log, which asks the decider (docs/TX.md
   * "Recovery", "Logs on disk"), so the coordinator need not wait for this participant's
   * COMMIT-PRIMARY answer (FaRM §3.4: commit is reported after the first COMMIT-PRIMARY ack). 0
   * otherwise (the decider's LOCK, which needs none; a transaction aborted here before its record
   * was written). A LOCK whose log refuses its record fails with the log's error.
   */
  public static final int LOCK_DURABLE = 1;

  /** Write-set entry kinds. */
  public static final int KIND_WRITE = 1;

  public static final int KIND_FREE = 2;

  private TxProtocol() {}
}
