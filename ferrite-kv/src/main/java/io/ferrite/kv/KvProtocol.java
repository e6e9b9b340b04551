package io.ferrite.kv;

/**
 * Service ids and opcodes of the kv face. Bodies are little-endian, encoded with {@link
 * io.ferrite.kernel.proto.Wire}; {@code str} is a u16-length UTF-8 string, {@code bytes} an
 * i32-length byte string.
 *
 * <h2>Directory: the master extension, service {@value #MASTER_SERVICE} on the master</h2>
 *
 * <pre>
 * CREATE_TABLE  str name, options                      -> table
 * GET_TABLE     str name                               -> table            (NOT_FOUND)
 * LIST_TABLES   -                                      -> i32 n, n x table
 * DROP_TABLE    str name                               -> -                (NOT_FOUND)
 * PLAN          str name ("" = every table)            -> i32 n, n x move  (shards off their ring owner)
 * BEGIN_MOVE    str name, i32 shard, i32 to            -> move             (journals the intent)
 * END_MOVE      str name, i32 shard, u8 commit         -> table, i64 version (journals placement or abort)
 * LIST_MOVES    -                                      -> i32 n, n x move  (intents not yet ended)
 * LOG_LOST      i32 server, i64 incarnation, i32 n, n x (i64 tableId, i32 shard)
 *                                    -> i32 n, n x (str name, i64 tableId, i32 shard, u8 lost)
 *               (servers only: a server whose kv log was empty at start; see the opcode)
 * GET_TABLE and CREATE_TABLE answer "table, i64 version": the placement version, bumped by each
 * committed move.
 *
 * move    = str name, i64 tableId, i32 shard, i32 from, i32 to, i64 token (the freeze's; 0 in a plan)
 *
 * options = i32 shards, i32 slotsPerShard, i32 extentRegionBytes, i32 maxExtentRegions,
 *           i32 maxKey, i32 maxValue, u8 durability (0 none, 1 interval, 2 always),
 *           u8 layout (0 pilaf, 1 hopscotch), i32 inlineBytes
 *           (options 2-3 of replicated tables: u8 durability | (replicas - 1) << 4)
 * table   = str name, i64 tableId, options, i32 shards x i32 serverId,
 *           and only when replicas > 1: shards x (u8 n, n x i32 backup serverId)
 * </pre>
 *
 * <h2>Shards: the memory-server service, service {@value #SERVER_SERVICE}</h2>
 *
 * <pre>
 * OPEN_SHARD  table, i32 shard                  -> layout    (creates it if absent; idempotent)
 * LAYOUT      i64 tableId, i32 shard, i64 version -> layout (NOT_FOUND: open it first; MOVED:
 *             a replicated shard whose fence is newer than the client's placement version)
 * PUT         i64 tableId, i32 shard, u8 mode, bytes key, bytes value, bytes expected -> u8 status
 * DELETE      i64 tableId, i32 shard, bytes key -> u8 status
 *             (a replicated table's shard answers u8 status, i64 seq: the write's sequence, 0 if
 *              it changed nothing; the client ships it to every backup with REPLICATE; a
 *              replicated table's PUT and DELETE end with i64 version, the writer's placement)
 * REPLICATE   i64 tableId, i32 shard, i64 seq, u8 delete, bytes key, bytes value, i64 version
 *                         -> u8 status
 *             (applied only if seq is newer than the key's on this copy; else NOT_APPLIED.
 *              version: the placement the shipper ships by; PUT, DELETE and REPLICATE older than
 *              the shard's fence answer MOVED, and without it, UNSUPPORTED on a fenced shard: a
 *              client older than the server)
 * MULTI_PUT   i64 tableId, i32 n, n x (i32 shard, bytes key, bytes value)
 *                         -> i32 n, n x (u8 status | u8 FAILED, u16 error code, str message)
 *                            (plain puts of the shards this server holds, each shard's pairs
 *                             applied in request order; a pair refused BUSY/MOVED changed nothing)
 * GET         i64 tableId, i32 shard, bytes key, i64 version -> u8 status, bytes value  (the RPC
 *             baseline; the version fenced as LAYOUT's)
 * STATS       i64 tableId, i32 shard            -> stats
 * DROP_SHARD  i64 tableId, i32 shard            -> -
 * PING        any bytes                         -> -         (the benchmark's RPC ceiling)
 * RESIZE      i64 tableId, i32 shard, i32 slots -> layout    (grows the table array; NO_SPACE)
 * FREEZE      i64 tableId, i32 shard, i64 token, i64 leaseMillis -> i32 pairs  (writes answer BUSY)
 * EXPORT      i64 tableId, i32 shard, i64 token, i32 from, i32 maxBytes
 *                         -> i32 next (-1: done), i32 slots, i32 n, n x (bytes key, bytes value)
 *                            (token 0 pages a retired shard: a pending move is completed from it)
 * CANCEL      i64 tableId, i32 shard, i64 token -> u8 retired  (1: the move must complete; 0: it is
 *                                                  cancelled for good, the freeze lifted)
 * RETIRE      i64 tableId, i32 shard, i64 token, i32 to -> -  (poisoned; then MOVED for everything)
 * IMPORT      table, i32 shard, u8 first, i32 slots, i32 n, n x (bytes key, bytes value) -> i32 count
 * SHARDS      -                                 -> i32 n, n x (i64 tableId, i32 shard, u8 state, i32 count)
 *                                                  state: 0 serving, 1 frozen, 2 retired,
 *                                                  3 retired and its regions freed (RELEASE)
 * RELEASE     i64 tableId, i32 shard, i32 to    -> u8 freed  (after the master committed the move of a
 *                                                  retired shard to server {@code to}: its regions
 *                                                  are freed, it still answers MOVED; 0: nothing
 *                                                  held; idempotent; INVALID_ARGUMENT if it serves
 *                                                  here or retired to another server)
 *
 * layout = i64 tableId, i32 shard, i64 epoch, i32 slots, ref entries, i32 n, n x ref extents
 * ref    = i32 regionId, i64 rkey, i64 length
 * stats  = i32 slots, i32 count, i64 extentBytesUsed, i64 extentBytesFree, i32 extentRegions,
 *          i64 moves, i64 puts, i64 fullErrors, i64 epoch, i32 overflowKeys, i32 overflowBlocks,
 *          i32 regions, i64 regionBytes
 * </pre>
 *
 * <p>Order: a connection's PUT, DELETE and MULTI_PUT to one shard are applied in the order they
 * arrived (the server queues them per shard as they arrive), so a client that pipelines writes on
 * one connection sees them applied in issue order. An {@code always} table's writes are answered
 * after the fsync that covers them (group commit).
 */
public final class KvProtocol {
  /** The directory's service id on the master. */
  public static final int MASTER_SERVICE = 41;

  /** The shard service's id on every memory server. */
  public static final int SERVER_SERVICE = 41;

  public static final int CREATE_TABLE = 1;
  public static final int GET_TABLE = 2;
  public static final int LIST_TABLES = 3;
  public static final int DROP_TABLE = 4;

  public static final int OPEN_SHARD = 1;
  public static final int LAYOUT = 2;
  public static final int PUT = 3;
  public static final int DELETE = 4;
  public static final int GET = 5;
  public static final int STATS = 6;
  public static final int DROP_SHARD = 7;

  /** Answers an empty body whatever the request: the RPC ceiling of a put. */
  public static final int PING = 8;

  /** Grows one shard's table array (both layouts); answers the new layout. */
  public static final int RESIZE = 9;

  /** Re-sharding, server side (docs/KV.md "Moving shards"). */
  public static final int FREEZE = 10;

  public static final int EXPORT = 11;
  public static final int CANCEL = 12;
  public static final int RETIRE = 13;
  public static final int IMPORT = 14;
  public static final int SHARDS = 15;

  /** Frees a retired shard's regions once its move is committed (docs/KV.md "Moving shards"). */
  public static final int RELEASE = 16;

  /**
   * Server: rewrite this server's kv log now as a snapshot of its durable shards (compaction, which
   * also runs by itself past {@code kv.log.compact}); empty request; answers the log's bytes before
   * and after (u64, u64).
   */
  public static final int COMPACT_LOG = 17;

  /** Server: plain puts of many pairs of one table, per shard in request order (see above). */
  public static final int MULTI_PUT = 18;

  /**
   * Server: a write the shard's primary applied, shipped by the writing client to a backup
   * (docs/KV.md "Replication"): {@code i64 tableId, i32 shard, i64 seq, u8 delete, bytes key, bytes
   * value -> u8 status} (NOT_APPLIED: the copy already has a newer write of the key). Ordered,
   * logged and (for {@code always}) group-committed like a PUT.
   */
  public static final int REPLICATE = 19;

  /**
   * Server: a page of a replicated shard's pairs for a repair (docs/KV.md "Replication"), only for
   * servers and the operator: {@code i64 tableId, i32 shard, i64 version, i64 afterHash, bytes
   * afterKey, i32 maxBytes -> u8 more, i32 n, n x (bytes key, bytes value, i64 seq)}, the pairs
   * after (afterHash, afterKey) in (XXH3 of the key unsigned, key) order; first sets the shard's
   * write fence to {@code version} (writes of clients with an older placement answer MOVED).
   */
  public static final int COPY_PAGE = 20;

  /**
   * Server, only for servers and the operator: {@code table, i32 shard, i64 version -> layout}: as
   * {@link #OPEN_SHARD}, for the copy a repair fills (docs/KV.md "Repairs"), {@code version} being
   * the placement version ADD_COPY answered. The copy's fence is raised to it: a LAYOUT, GET or
   * write that carries an older placement version answers MOVED. A client whose placement predates
   * the death of the copy's server still names that server as the primary, and must never read the
   * half-filled copy, nor later the complete backup it becomes, as if it were the primary; once it
   * fetched the table it knows the server's role.
   */
  public static final int OPEN_COPY = 21;

  /**
   * Directory: {@code str name, i32 shard -> table, i64 version, i32 server}: adds a copy being
   * filled ({@link TableInfo#syncing}) on an ALIVE server that holds none of the shard (CONFLICT
   * while one is filled already; INVALID_ARGUMENT if the shard has its copies or no server is
   * left).
   */
  public static final int ADD_COPY = 9;

  /**
   * Directory: {@code str name, i32 shard, i32 server, u8 commit -> table, i64 version}: the copy
   * being filled on {@code server} becomes a full backup (commit 1) or is dropped (0).
   */
  public static final int END_COPY = 10;

  /**
   * Directory, servers only: {@code i32 server, i64 incarnation, i32 n, n x (i64 tableId, i32
   * shard) -> i32 n, n x (str name, i64 tableId, i32 shard, u8 lost)}: sent by a memory server
   * whose kv log was empty when it started (removed, a wiped disk: docs/KV.md "Lost shards"),
   * listing the durable shards it holds now. Before its process ({@code incarnation}) registered
   * with that master, every copy listed on it was placed for an earlier process; after, only the
   * copies listed when it registered count (later ones are fresh placements). Every copy of a
   * durable table's shard the directory lists on that server and the server does not hold is gone:
   * a primary gives way to its first complete backup, a backup leaves the copies, and a shard left
   * with no copy is marked {@link TableInfo#LOST} (its pairs were acknowledged and are nowhere:
   * {@code DATA_LOST}). Answers the copies dropped ({@code lost} 1: the shard is lost). Journaled
   * as {@code PLACED}.
   */
  public static final int LOG_LOST = 11;

  /** Re-sharding, directory side. */
  public static final int PLAN = 5;

  public static final int BEGIN_MOVE = 6;
  public static final int END_MOVE = 7;
  public static final int LIST_MOVES = 8;

  /** PUT modes. */
  public static final int MODE_PUT = 0;

  public static final int MODE_PUT_IF_ABSENT = 1;
  public static final int MODE_COMPARE_AND_SET = 2;

  /** Statuses of PUT, DELETE and GET. */
  public static final int CREATED = 0;

  public static final int REPLACED = 1;

  /** putIfAbsent found the key, or compare-and-set found another value (or no key). */
  public static final int NOT_APPLIED = 2;

  public static final int DELETED = 3;
  public static final int MISSING = 4;
  public static final int FOUND = 5;

  /** A MULTI_PUT pair that failed: an error code and a message follow. */
  public static final int FAILED = 255;

  private KvProtocol() {}
}
