package io.ferrite.tx;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * One transaction (FaRM §3.4), run by its coordinator: this client. Reads are one-sided and
 * verified ({@link TxClient#read}); writes are buffered here until {@link #txCommit}. Confined to
 * one thread; single use.
 *
 * <h2>Commit</h2>
 *
 * <ol>
 *   <li>No writes: with at most one object read, nothing to do (that read was consistent); else
 *       VALIDATE every read.
 *   <li>Every object read or written on one server: COMMIT_LOCAL, which locks, validates against
 *       the server's own memory and applies in one step ({@link io.ferrite.tx.server.TxService}).
 *   <li>Otherwise two-phase: LOCK the write set at each primary (version check + lock bit, new
 *       values carried along, logged at the backups); VALIDATE the objects only read with one-sided
 *       reads (a version changed or locked: abort); COMMIT at the decider (the current primary of
 *       the decider region, the lowest region id written), whose OK is the commit point; then
 *       COMMIT at the other participants, waited for only where a participant's LOCK answer says
 *       some region of its writes has no backup (FaRM §3.4 reports commit after the first
 *       COMMIT-PRIMARY ack: a participant whose LOCK records are at its backups is finished from
 *       the decider if it is lost; one without backups makes its writes durable only as it applies
 *       them). Every failure before the decider's OK sends ABORT to every participant.
 * </ol>
 *
 * Objects allocated in a transaction that aborts are freed again (best effort: a failure leaves an
 * unreferenced object, as FaRM's allocator would without its recovery).
 */
public final class Transaction {
  /** Where a test's coordinator stops, as if it died there. */
  enum Stop {
    NONE,
    AFTER_LOCK,
    AFTER_DECIDER
  }

  private record WriteOp(int kind, byte[] value) {}

  private final TxClient client;
  private final long txid;
  private final Map<FatPointer, TxClient.Copy> reads = new LinkedHashMap<>();
  private final Map<FatPointer, WriteOp> writes = new LinkedHashMap<>();
  private final List<FatPointer> allocated = new ArrayList<>();
  private boolean finished;

  Transaction(TxClient client, long txid) {
    this.client = client;
    this.txid = txid;
  }

  /**
   * Allocates an object of {@code size} bytes (zeroed), near {@code hint} if not null (same region,
   * so same server). It is freed again if this transaction aborts.
   */
  public FatPointer txAlloc(int size, FatPointer hint) {
    open();
    TxClient.Allocated a = client.allocate(size, hint);
    FatPointer p = a.ptr();
    allocated.add(p);
    // In the write set (zeros at the version ALLOC gave it), so the object reaches the region's
    // backups when this transaction commits, as every write does.
    reads.put(p, new TxClient.Copy(a.version(), new byte[size]));
    writes.put(p, new WriteOp(TxProtocol.KIND_WRITE, new byte[size]));
    return p;
  }

  /**
   * Reads {@code p} in this transaction: what this transaction wrote to it, or a verified one-sided
   * copy (the same copy again on a repeated read), whose version VALIDATE checks.
   *
   * @throws FerriteException NOT_FOUND if the object was freed (by this or another transaction)
   */
  public byte[] txRead(FatPointer p) {
    open();
    WriteOp w = writes.get(p);
    if (w != null) {
      if (w.kind() == TxProtocol.KIND_FREE) {
        throw TxClient.freed(p);
      }
      return w.value().clone();
    }
    return readCopy(p).payload().clone();
  }

  /**
   * Reads every object of {@code ptrs} in this transaction, as {@link #txRead} reads each, but with
   * the one-sided reads of those not read yet all in flight together (grouped per primary, one
   * batch each: over tcp one round trip for the lot, not one per object). Each copy is verified as
   * a single read's is, and one found locked or torn is read again as a single read is; the copies
   * are this transaction's read set, which VALIDATE and LOCK check, as with {@link #txRead}.
   *
   * @return the payloads, in the order of {@code ptrs} (a pointer given twice: the same copy)
   * @throws FerriteException NOT_FOUND if an object was freed (by this or another transaction)
   */
  public List<byte[]> txReadAll(List<FatPointer> ptrs) {
    open();
    List<FatPointer> missing = new ArrayList<>(ptrs.size());
    for (FatPointer p : ptrs) {
      WriteOp w = writes.get(p);
      if (w != null && w.kind() == TxProtocol.KIND_FREE) {
        throw TxClient.freed(p);
      }
      if (w == null && !reads.containsKey(p) && !missing.contains(p)) {
        missing.add(p);
      }
    }
    if (!missing.isEmpty()) {
      TxClient.Copy[] copies = client.readAll(missing);
      for (int i = 0; i < copies.length; i++) {
        reads.put(missing.get(i), copies[i]);
      }
    }
    List<byte[]> out = new ArrayList<>(ptrs.size());
    for (FatPointer p : ptrs) {
      WriteOp w = writes.get(p);
      out.add(w != null ? w.value().clone() : reads.get(p).payload().clone());
    }
    return out;
  }

  private TxClient.Copy readCopy(FatPointer p) {
    TxClient.Copy c = reads.get(p);
    if (c == null) {
      c = client.read(p);
      reads.put(p, c);
    }
    return c;
  }

  /** Writes {@code value} (at most the object's size; zero-padded) to {@code p} at commit. */
  public void txWrite(FatPointer p, byte[] value) {
    open();
    if (value.length > p.size()) {
      throw new IllegalArgumentException(
          "tx write of " + value.length + " bytes to " + p + " (expected: <= " + p.size() + ")");
    }
    if (writes.containsKey(p) && writes.get(p).kind() == TxProtocol.KIND_FREE) {
      throw TxClient.freed(p);
    }
    readCopy(p); // FaRM: the write set is read first; LOCK checks this version
    writes.put(p, new WriteOp(TxProtocol.KIND_WRITE, value.clone()));
  }

  /** Frees {@code p} at commit: its incarnation is bumped, its slot reused for its size class. */
  public void txFree(FatPointer p) {
    open();
    readCopy(p);
    writes.put(p, new WriteOp(TxProtocol.KIND_FREE, new byte[0]));
  }

  /** Commits: committed, or the reason it aborted (see the class comment). */
  public TxResult txCommit() {
    return commit(Stop.NONE);
  }

  TxResult commit(Stop stop) {
    open();
    finished = true;
    TxResult result;
    try {
      result = commitOnce(stop);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.MOVED) {
        // A single-server commit sent by a stale map: refetch the map before the next one.
        reads.keySet().forEach(p -> client.forget(p.region()));
        writes.keySet().forEach(p -> client.forget(p.region()));
        result = TxResult.abort(TxResult.Reason.STALE_MAP, e.getMessage());
      } else {
        throw e;
      }
    }
    if (!result.committed()) {
      freeAllocated();
    }
    return result;
  }

  private TxResult commitOnce(Stop stop) {
    List<FatPointer> readOnly = new ArrayList<>();
    for (FatPointer p : reads.keySet()) {
      if (!writes.containsKey(p)) {
        readOnly.add(p);
      }
    }
    if (writes.isEmpty()) {
      return reads.size() <= 1 ? TxResult.COMMITTED : validate(readOnly);
    }
    Map<Integer, List<FatPointer>> byServer = new TreeMap<>();
    int deciderRegion = Integer.MAX_VALUE;
    for (FatPointer p : writes.keySet()) {
      byServer.computeIfAbsent(client.view(p.region()).primary(), k -> new ArrayList<>()).add(p);
      deciderRegion = Math.min(deciderRegion, p.region());
    }
    boolean single = byServer.size() == 1;
    int only = byServer.keySet().iterator().next();
    for (FatPointer p : readOnly) {
      single &= client.view(p.region()).primary() == only;
    }
    if (single) {
      return commitLocal(only, readOnly);
    }
    return twoPhase(byServer, deciderRegion, readOnly, stop);
  }

  private TxResult commitLocal(int server, List<FatPointer> readOnly) {
    Wire.Writer w = new Wire.Writer().i64(txid);
    writeSet(w, new ArrayList<>(writes.keySet()));
    w.i32(readOnly.size());
    for (FatPointer p : readOnly) {
      FatPointer.writeTo(w, p);
      w.i64(reads.get(p).version());
    }
    int st;
    try {
      st =
          status(
              TxLeaseWord.callWhileLeaseLapses(
                  client.ferrite(), server, TxProtocol.COMMIT_LOCAL, w.toBuffer()));
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.TIMEOUT
          && e.code() != ErrorCode.DROPPED
          && e.code() != ErrorCode.UNAVAILABLE) {
        throw e; // the server refused it (MOVED, DATA_LOST, ...): it did not run
      }
      if (TxLeaseWord.lapsed(e)) {
        forgetAll(); // refused before it ran: its primary may have been deposed (docs/TX.md
        // "Leases")
        return TxResult.abort(
            TxResult.Reason.UNREACHABLE, "server " + server + ": " + e.getMessage());
      }
      forgetAll();
      // No answer: not knowing whether it ran is not an abort; the caller learns it from the data.
      throw new FerriteException(
          e.code(),
          "tx "
              + Long.toHexString(txid)
              + ": single-server commit at server "
              + server
              + " has an unknown outcome: "
              + e.getMessage(),
          e);
    }
    return st == TxProtocol.OK ? TxResult.COMMITTED : aborted(st, "server " + server);
  }

  private void writeSet(Wire.Writer w, List<FatPointer> ptrs) {
    w.i32(ptrs.size());
    for (FatPointer p : ptrs) {
      WriteOp op = writes.get(p);
      FatPointer.writeTo(w, p);
      w.i64(reads.get(p).version()).u8(op.kind()).bytes(op.value());
    }
  }

  private TxResult twoPhase(
      Map<Integer, List<FatPointer>> byServer,
      int deciderRegion,
      List<FatPointer> readOnly,
      Stop stop) {
    int decider = client.view(deciderRegion).primary();
    Map<Integer, CompletableFuture<ByteBuffer>> locks = new HashMap<>();
    Map<Integer, ByteBuffer> lockBodies = new HashMap<>();
    int left = byServer.size();
    for (Map.Entry<Integer, List<FatPointer>> e : byServer.entrySet()) {
      Wire.Writer w = new Wire.Writer().i64(txid).i32(deciderRegion);
      writeSet(w, e.getValue());
      lockBodies.put(e.getKey(), w.toBuffer());
      locks.put(
          e.getKey(),
          send(e.getKey(), TxProtocol.LOCK, lockBodies.get(e.getKey()).duplicate(), --left == 0));
    }
    TxResult failed = null;
    // Participants whose LOCK survives the loss of their process (the LOCK answer says): its
    // records
    // are at every backup of their regions or, for a region without one, in their own log.
    List<Integer> durable = new ArrayList<>();
    for (Map.Entry<Integer, CompletableFuture<ByteBuffer>> e : locks.entrySet()) {
      // A LOCK refused before it ran (its server's lease lapsed) is sent again, bounded.
      CompletableFuture<ByteBuffer> f =
          TxLeaseWord.againWhileLeaseLapses(
              client.ferrite(),
              e.getKey(),
              TxProtocol.LOCK,
              lockBodies.get(e.getKey()),
              e.getValue());
      TxResult r = outcome(f, e.getKey(), durable);
      if (r != null && (failed == null || failed.reason() == TxResult.Reason.UNREACHABLE)) {
        failed = r;
      }
    }
    if (failed == null && stop == Stop.AFTER_LOCK) {
      return TxResult.abort(
          TxResult.Reason.UNREACHABLE, "test: the coordinator stopped after LOCK");
    }
    if (failed == null) {
      failed = validate(readOnly);
      failed = failed.committed() ? null : failed;
    }
    if (failed != null) {
      broadcast(byServer.keySet(), TxProtocol.ABORT);
      return failed;
    }
    // The commit point: the decider region's primary's OK. COMMIT is idempotent (decided once), so
    // a lost answer is asked again, of the region's current primary: after a failover, the
    // promoted backup decides from the DECIDE record it holds (or, without one, decides itself).
    // The regions written besides the decider region: the decider keeps its commit decision
    // pinned until each of them resolved it (docs/TX.md "Truncation").
    SortedSet<Integer> others0 = new TreeSet<>();
    for (List<FatPointer> ps : byServer.values()) {
      for (FatPointer p : ps) {
        if (p.region() != deciderRegion) {
          others0.add(p.region());
        }
      }
    }
    Wire.Writer cw = new Wire.Writer().i64(txid).i32(deciderRegion).i32(others0.size());
    others0.forEach(cw::i32);
    ByteBuffer commitBody = cw.toBuffer();
    int st = -1;
    FerriteException lost = null;
    try {
      st = status(client.callPrimary(deciderRegion, TxProtocol.COMMIT, commitBody));
      decider = client.view(deciderRegion).primary();
    } catch (FerriteException e) {
      lost = e;
    }
    if (st < 0) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "tx "
              + Long.toHexString(txid)
              + ": the primary of decider region "
              + deciderRegion
              + " did not answer COMMIT; the outcome is unknown",
          lost);
    }
    if (st != TxProtocol.OK) {
      broadcast(byServer.keySet(), TxProtocol.ABORT);
      return TxResult.abort(
          TxResult.Reason.LEASE_LAPSED, "decider server " + decider + " aborted it");
    }
    if (stop == Stop.AFTER_DECIDER) {
      return TxResult.COMMITTED;
    }
    List<Integer> others = new ArrayList<>(byServer.keySet());
    others.remove(Integer.valueOf(decider));
    // Committed: a participant that misses this COMMIT learns it from the decider (its reaper).
    if (durable.containsAll(others) && !polledCheaply(others)) {
      // FaRM §3.4: commit is reported after the first COMMIT-PRIMARY ack. Every other participant's
      // LOCK record survives the loss of its process (at each backup of its regions, or in its own
      // log for a region without one), so its COMMIT is sent and not waited for (one round trip
      // less): a participant that loses its process before applying it leaves the transaction
      // locked at the promoted backup or at the region rebuilt from its log, which asks the
      // decider. Its objects stay locked until it applies, so a later read or LOCK of them sees the
      // commit or waits for it.
      for (int server : others) {
        client
            .ferrite()
            .call(server, TxProtocol.SERVER_SERVICE, TxProtocol.COMMIT, commitBody.duplicate());
      }
    } else {
      // A participant whose LOCK answer did not say so (a region it no longer held as it answered,
      // a server without the flag) makes its writes durable only when it applies them: the answer
      // is waited for. Over shm it is waited for anyway (polledCheaply).
      broadcast(others, TxProtocol.COMMIT, commitBody);
    }
    return TxResult.COMMITTED;
  }

  /**
   * Whether every one of {@code servers} is reached over shm ({@link
   * io.ferrite.fabric.FabricConnection#mapsRegions}), where this thread's wait for an answer polls
   * its ring (no system call), while an answer nobody waits for has the server ring the doorbell (a
   * socket write) and wakes the client's I/O thread to read it. Measured (docs/PERFORMANCE.md "Tx
   * face", 2026-11-27 12:00-12:19 UTC, two alternating pairs over shm with replicas 1): a
   * two-server commit that waits for the other participant's COMMIT took 37 / 43 µs at p50, one
   * that does not 49 / 79 µs, and transfers at one thread ran 40 / 25 k/s against 30 / 21 k/s; so
   * over shm the COMMIT is waited for. Over tcp (a round trip of ~30 µs, and no polling) it is not.
   */
  private boolean polledCheaply(List<Integer> servers) {
    for (int server : servers) {
      try {
        if (!client.ferrite().connection(server).mapsRegions()) {
          return false;
        }
      } catch (FerriteException e) {
        return false; // no connection: the call will say so; nothing to poll
      }
    }
    return !servers.isEmpty();
  }

  /** Drops every region this transaction touched from the client's map (a primary failed). */
  private void forgetAll() {
    reads.keySet().forEach(p -> client.forget(p.region()));
    writes.keySet().forEach(p -> client.forget(p.region()));
  }

  /** Sends ABORT for this transaction to {@code servers} and waits; failures ignored. */
  private void broadcast(Iterable<Integer> servers, int opcode) {
    broadcast(servers, opcode, new Wire.Writer().i64(txid).toBuffer());
  }

  /** Sends {@code opcode} for this transaction to {@code servers} and waits; failures ignored. */
  private void broadcast(Iterable<Integer> servers, int opcode, ByteBuffer body) {
    List<Integer> list = new ArrayList<>();
    servers.forEach(list::add);
    List<CompletableFuture<ByteBuffer>> all = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      all.add(send(list.get(i), opcode, body.duplicate(), i == list.size() - 1));
    }
    for (CompletableFuture<ByteBuffer> f : all) {
      try {
        f.join();
      } catch (CompletionException e) {
        // A participant that misses ABORT or COMMIT resolves the transaction when its lease lapses.
      }
    }
  }

  /**
   * Calls {@code opcode} at {@code server}: asynchronously, or, for the last of a round, on this
   * thread ({@link io.ferrite.kernel.client.FerriteClient#callSync}: over tcp a blocking lane, no
   * hand-off to the event loop), the earlier calls of the round being in flight meanwhile. Over shm
   * the wait for the last call also reads the answers of the earlier ones from their rings (the
   * ring client helps every call in flight of the waiting thread), so none needs a doorbell and an
   * I/O thread's wake-up; before it did, the first LOCK's answer came that way in 97 % of traced
   * commits (docs/TX.md, Measurements).
   */
  private CompletableFuture<ByteBuffer> send(
      int server, int opcode, ByteBuffer body, boolean last) {
    if (!last) {
      return client.ferrite().call(server, TxProtocol.SERVER_SERVICE, opcode, body);
    }
    try {
      return CompletableFuture.completedFuture(
          client.ferrite().callSync(server, TxProtocol.SERVER_SERVICE, opcode, body));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * A LOCK answer: null for OK, else the abort it means; an OK whose LOCK records survive the loss
   * of the participant's process ({@link TxProtocol#LOCK_DURABLE}: at every backup, or in its own
   * log) adds {@code server} to {@code durable}.
   */
  private TxResult outcome(CompletableFuture<ByteBuffer> f, int server, List<Integer> durable) {
    try {
      Wire.Reader r = new Wire.Reader(f.join(), "tx LOCK status");
      int st = r.u8("status");
      if (st == TxProtocol.OK && r.remaining() > 0 && r.u8("durable") == TxProtocol.LOCK_DURABLE) {
        durable.add(server);
      }
      r.end();
      return st == TxProtocol.OK ? null : aborted(st, "LOCK at server " + server);
    } catch (CompletionException e) {
      Throwable c = e.getCause();
      if (c instanceof FerriteException fe && fe.code() == ErrorCode.MOVED) {
        writes.keySet().forEach(p -> client.forget(p.region()));
        return TxResult.abort(TxResult.Reason.STALE_MAP, fe.getMessage());
      }
      forgetAll(); // the next transaction fetches the map again (a promoted backup)
      return TxResult.abort(TxResult.Reason.UNREACHABLE, "LOCK at server " + server + ": " + c);
    }
  }

  /**
   * VALIDATE (FaRM §3.4): every object only read still holds the version this transaction read and
   * is not locked; a one-sided verified read each. FaRM reads the header word alone; a lone 8-byte
   * read can tear on Ferrite's fabrics (the local fabric splits it), and the header cannot be
   * checked by itself, so the whole object is read and verified (one line for small objects).
   */
  private TxResult validate(List<FatPointer> readOnly) {
    for (FatPointer p : readOnly) {
      if (client.probe(p) != reads.get(p).version()) {
        return TxResult.abort(TxResult.Reason.VALIDATION, p + " changed, is locked or was freed");
      }
    }
    return TxResult.COMMITTED;
  }

  private static TxResult aborted(int status, String where) {
    return switch (status) {
      case TxProtocol.LOCKED ->
          TxResult.abort(TxResult.Reason.LOCKED, where + ": an object is locked");
      case TxProtocol.CHANGED ->
          TxResult.abort(TxResult.Reason.VALIDATION, where + ": an object's version changed");
      default -> TxResult.abort(TxResult.Reason.LEASE_LAPSED, where + ": status " + status);
    };
  }

  private static int status(ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "tx status");
    int st = r.u8("status");
    r.end();
    return st;
  }

  private void freeAllocated() {
    for (FatPointer p : allocated) {
      try {
        Transaction t = client.txBegin();
        t.txFree(p);
        t.txCommit();
      } catch (FerriteException e) {
        // Best effort (see the class comment).
      }
    }
  }

  private void open() {
    if (finished) {
      throw new IllegalStateException("tx " + Long.toHexString(txid) + " has finished");
    }
  }

  /**
   * For history checkers (strict serializability, docs/TX.md): the version of every object this
   * transaction read (the version its copy had), in read order. Complete once it has finished.
   */
  public Map<FatPointer, Long> readVersions() {
    Map<FatPointer, Long> out = new LinkedHashMap<>();
    reads.forEach(
        (p, c) -> {
          if (!allocated.contains(p)) { // an allocation is not a read
            out.put(p, c.version());
          }
        });
    return out;
  }

  /**
   * For history checkers: the version each written (or freed) object holds once this transaction
   * committed: the version it read plus one (COMMIT-PRIMARY bumps it by one). Meaningful only if
   * {@link #txCommit} answered committed.
   */
  public Map<FatPointer, Long> writtenVersions() {
    Map<FatPointer, Long> out = new LinkedHashMap<>();
    writes.keySet().forEach(p -> out.put(p, reads.get(p).version() + 1));
    return out;
  }

  /** This transaction's id (random per transaction). */
  public long id() {
    return txid;
  }
}
