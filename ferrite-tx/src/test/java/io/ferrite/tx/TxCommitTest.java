package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tx face end to end over the local fabric with two memory servers: single- and two-server
 * commits, conflicts and their abort reasons, freed objects, bad input, and coordinators that stop
 * after LOCK or after the decider's COMMIT.
 */
@ExtendWith(SeedExtension.class)
class TxCommitTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;
  TxClient a;
  TxClient b;

  /** Two servers; client a allocates on one, client b (its own first region) on the other. */
  void start() throws Exception {
    cluster = new TxCluster(dir, 2, false);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
  }

  static byte[] bytes(Random random, int n) {
    byte[] v = new byte[n];
    random.nextBytes(v);
    return v;
  }

  static byte[] num(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, v).array();
  }

  static long num(byte[] b) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
  }

  static FatPointer make(TxClient c, byte[] value) {
    Transaction t = c.txBegin();
    FatPointer p = t.txAlloc(value.length, null);
    t.txWrite(p, value);
    assertTrue(t.txCommit().committed());
    return p;
  }

  /** Two objects on different servers (a's region, the decider, and one b made elsewhere). */
  FatPointer[] twoServers(byte[] x, byte[] y) throws InterruptedException {
    return cluster.twoServers(a, x, b, y);
  }

  @Test
  void singleServerCommitWritesEveryLineAndReadsBack(Random random) throws Exception {
    start();
    byte[] v1 = bytes(random, 700);
    FatPointer p = make(a, v1);
    assertArrayEquals(v1, a.lockFreeRead(p));
    byte[] v2 = bytes(random, 700);
    Transaction t = a.txBegin();
    assertArrayEquals(v1, t.txRead(p));
    t.txWrite(p, v2);
    assertArrayEquals(v2, t.txRead(p), "a transaction reads its own write");
    assertTrue(t.txCommit().committed());
    assertArrayEquals(v2, b.lockFreeRead(p), "another client sees the commit");
  }

  @Test
  void twoServerCommitAppliesAtBothPrimaries(Random random) throws Exception {
    start();
    FatPointer[] p = twoServers(num(100), num(0));
    Transaction t = a.txBegin();
    long from = num(t.txRead(p[0]));
    long to = num(t.txRead(p[1]));
    t.txWrite(p[0], num(from - 30));
    t.txWrite(p[1], num(to + 30));
    assertTrue(t.txCommit().committed());
    assertEquals(70, num(b.lockFreeRead(p[0])));
    assertEquals(30, num(b.lockFreeRead(p[1])));
  }

  @Test
  void aWriteAfterAConflictingCommitAbortsWithValidation() throws Exception {
    start();
    FatPointer[] p = twoServers(num(1), num(2));
    Transaction t1 = a.txBegin();
    t1.txRead(p[0]);
    t1.txRead(p[1]);
    Transaction t2 = b.txBegin();
    t2.txWrite(p[0], num(10));
    assertTrue(t2.txCommit().committed());
    t1.txWrite(p[1], num(20)); // reads p[0] only: the read set must be validated
    TxResult r = t1.txCommit();
    assertEquals(TxResult.Reason.VALIDATION, r.reason(), r.detail());
    assertEquals(2, num(a.lockFreeRead(p[1])), "the aborted write is not applied");

    Transaction t3 = a.txBegin();
    t3.txRead(p[0]);
    Transaction t4 = b.txBegin();
    t4.txWrite(p[0], num(11));
    assertTrue(t4.txCommit().committed());
    t3.txWrite(p[0], num(12)); // a single-server transaction: LOCK's version check
    assertEquals(TxResult.Reason.VALIDATION, t3.txCommit().reason());
    assertEquals(11, num(a.lockFreeRead(p[0])));

    // Single-server, read set beside the write set: COMMIT_LOCAL validates at the server.
    FatPointer q = make(a, num(30));
    Transaction t5 = a.txBegin();
    t5.txRead(p[0]);
    Transaction t6 = b.txBegin();
    t6.txWrite(p[0], num(13));
    assertTrue(t6.txCommit().committed());
    t5.txWrite(q, num(31));
    assertEquals(TxResult.Reason.VALIDATION, t5.txCommit().reason());
    assertEquals(30, num(a.lockFreeRead(q)));
  }

  @Test
  void aWriteToAnObjectLockedByAnotherTransactionAbortsWithLocked() throws Exception {
    start();
    FatPointer[] p = twoServers(num(1), num(2));
    Transaction waiting = b.txBegin();
    waiting.txRead(p[0]);
    Transaction holder = a.txBegin();
    holder.txWrite(p[0], num(5));
    holder.txWrite(p[1], num(6));
    holder.commit(Transaction.Stop.AFTER_LOCK); // holds both locks: its coordinator "died"
    waiting.txWrite(p[0], num(7));
    TxResult r = waiting.txCommit();
    assertEquals(TxResult.Reason.LOCKED, r.reason(), r.detail());
  }

  @Test
  void locksOfACoordinatorThatDiedAfterLockAreReleasedAndItsWritesNeverApplied() throws Exception {
    start();
    FatPointer[] p = twoServers(num(1), num(2));
    Transaction dead = a.txBegin();
    dead.txWrite(p[0], num(50));
    dead.txWrite(p[1], num(60));
    dead.commit(Transaction.Stop.AFTER_LOCK);
    // The participants' reapers resolve it within a lease plus a tick: retried until then.
    TxResult r = null;
    for (int i = 0; i < 500 && (r == null || !r.committed()); i++) {
      Thread.sleep(10);
      Transaction t = b.txBegin();
      long x = num(t.txRead(p[0]));
      long y = num(t.txRead(p[1]));
      assertEquals(1, x, "the dead coordinator's write must never be applied");
      assertEquals(2, y, "the dead coordinator's write must never be applied");
      t.txWrite(p[0], num(x + 1));
      t.txWrite(p[1], num(y + 1));
      r = t.txCommit();
    }
    assertTrue(r.committed(), "still locked after 500 attempts: " + r.detail());
    assertEquals(2, num(a.lockFreeRead(p[0])));
    assertEquals(3, num(a.lockFreeRead(p[1])));
  }

  @Test
  void aCoordinatorThatDiedAfterTheDecidersCommitIsFinishedByTheOtherParticipant()
      throws Exception {
    start();
    FatPointer[] p = twoServers(num(1), num(2));
    Transaction dead = a.txBegin();
    dead.txWrite(p[0], num(50));
    dead.txWrite(p[1], num(60));
    assertTrue(dead.commit(Transaction.Stop.AFTER_DECIDER).committed());
    long[] seen = {num(a.lockFreeRead(p[0])), num(a.lockFreeRead(p[1]))};
    for (int i = 0; i < 500 && (seen[0] != 50 || seen[1] != 60); i++) {
      Thread.sleep(10);
      // Only the decider's object may be ahead: lock-free reads of the other retry while locked.
      seen = new long[] {num(a.lockFreeRead(p[0])), num(a.lockFreeRead(p[1]))};
    }
    assertEquals(50, seen[0]);
    assertEquals(60, seen[1], "the non-decider must learn the commit from the decider");
  }

  @Test
  void aFreedObjectIsReportedByItsIncarnationAndItsSlotReusedForItsSizeClass() throws Exception {
    start();
    FatPointer p = make(a, num(7));
    Transaction t = a.txBegin();
    t.txFree(p);
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(FerriteException.class, () -> t.txRead(p)).code());
    assertTrue(t.txCommit().committed());
    FerriteException e = assertThrows(FerriteException.class, () -> b.lockFreeRead(p));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains("freed"), e.getMessage());
    Transaction t2 = a.txBegin();
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(FerriteException.class, () -> t2.txRead(p)).code());

    Transaction t3 = a.txBegin();
    FatPointer q = t3.txAlloc(8, p);
    assertTrue(t3.txCommit().committed());
    assertEquals(p.offset(), q.offset(), "the freed slot is reused for its size class");
    assertEquals(p.incarnation() + 1, q.incarnation());
    assertEquals(0, num(a.lockFreeRead(q)));
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(FerriteException.class, () -> a.lockFreeRead(p)).code());
  }

  @Test
  void anAbortedTransactionFreesWhatItAllocated() throws Exception {
    start();
    FatPointer x = make(a, num(1));
    Transaction t = a.txBegin();
    t.txRead(x);
    FatPointer fresh = t.txAlloc(8, x);
    Transaction other = a.txBegin();
    other.txWrite(x, num(2));
    assertTrue(other.txCommit().committed());
    t.txWrite(x, num(3));
    assertEquals(TxResult.Reason.VALIDATION, t.txCommit().reason());
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(FerriteException.class, () -> a.lockFreeRead(fresh)).code());
  }

  @Test
  void badInputFailsWithClearErrors() throws Exception {
    start();
    FatPointer x = make(a, num(1));
    Transaction t = a.txBegin();
    FerriteException big = assertThrows(FerriteException.class, () -> t.txAlloc(1001, x));
    assertEquals(ErrorCode.TOO_LARGE, big.code());
    assertTrue(big.getMessage().contains("tx.object.max"), big.getMessage());
    FerriteException bigNew = assertThrows(FerriteException.class, () -> t.txAlloc(1001, null));
    assertEquals(ErrorCode.TOO_LARGE, bigNew.code());

    FerriteException noCap =
        assertThrows(FerriteException.class, () -> a.lockFreeRead(new FatPointer(9999, 0, 8, 0)));
    assertEquals(ErrorCode.NO_SUCH_REGION, noCap.code());
    assertTrue(noCap.getMessage().contains("capability"), noCap.getMessage());

    FerriteException stale =
        assertThrows(
            FerriteException.class,
            () ->
                a.lockFreeRead(
                    new FatPointer(x.region(), x.offset(), x.size(), x.incarnation() + 5)));
    assertEquals(ErrorCode.NOT_FOUND, stale.code());
    assertThrows(IllegalArgumentException.class, () -> t.txWrite(x, new byte[9]));
  }

  @Test
  void aFullRegionRefusesAnAllocationBesideItsObjectsAndLosesNothing(Random random)
      throws Exception {
    start();
    FatPointer first = make(a, bytes(random, 1000));
    List<FatPointer> all = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    FerriteException full = null;
    for (int i = 0; i < 10_000 && full == null; i++) {
      Transaction t = a.txBegin();
      try {
        FatPointer p = t.txAlloc(1000, first);
        byte[] v = bytes(random, 1000);
        t.txWrite(p, v);
        assertTrue(t.txCommit().committed());
        all.add(p);
        values.add(v);
      } catch (FerriteException e) {
        full = e;
      }
    }
    assertTrue(full != null, "256 KiB never filled up");
    assertEquals(ErrorCode.NO_SPACE, full.code());
    assertTrue(
        full.getMessage().contains("tx region " + first.region() + " is full"), full.getMessage());
    for (int i = 0; i < all.size(); i++) {
      assertArrayEquals(values.get(i), b.lockFreeRead(all.get(i)), "object " + i);
    }
    // Without a hint the client moves to a new region.
    Transaction t = a.txBegin();
    FatPointer elsewhere = t.txAlloc(1000, null);
    assertTrue(t.txCommit().committed());
    assertNotEquals(first.region(), elsewhere.region());
  }

  @Test
  void theRegionMapSurvivesAMasterRestart() throws Exception {
    start();
    FatPointer x = make(a, num(41));
    int primary = a.view(x.region()).primary();
    cluster.startMaster();
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    assertEquals(primary, fresh.view(x.region()).primary(), "the journaled placement");
    assertEquals(41, num(fresh.lockFreeRead(x)));
  }

  @Test
  void aStaleRegionMapOrCapabilityIsFetchedAgain() throws Exception {
    start();
    FatPointer x = make(a, num(5));
    FatPointer elsewhere = make(b, num(6));
    TxClient.RegionView real = a.view(x.region());
    int other = a.view(elsewhere.region()).primary();
    RegionRef ref = real.ref();
    // A map naming the wrong primary: that server answers MOVED, the client refetches.
    a.cache(
        new TxClient.RegionView(
            x.region(), other, new RegionRef(other, ref.regionId(), ref.rkey(), ref.length())));
    Transaction t = a.txBegin();
    FatPointer y = t.txAlloc(8, x);
    t.txWrite(x, num(7));
    assertTrue(t.txCommit().committed());
    assertEquals(real.primary(), a.view(x.region()).primary());
    assertEquals(real.primary(), a.view(y.region()).primary());
    // A capability that no longer opens the region: BAD_RKEY, refetched.
    a.cache(
        new TxClient.RegionView(
            x.region(),
            real.primary(),
            new RegionRef(real.primary(), ref.regionId(), ref.rkey() ^ 0x5a5a, ref.length())));
    assertEquals(7, num(a.lockFreeRead(x)));
  }

  @Test
  void anUncontendedLockFreeReadIsOneOneSidedReadOfTheObjectsLines(Random random) throws Exception {
    start();
    byte[] v = bytes(random, 300);
    FatPointer x = make(a, v);
    a.lockFreeRead(x); // the map and capability are fetched once, then cached
    int primary = a.view(x.region()).primary();
    Counters counters = a.ferrite().connection(primary).counters();
    long ops = counters.ops(OpKind.READ);
    long bytes = counters.bytes(OpKind.READ);
    long rpcs = counters.ops(OpKind.RPC);
    assertArrayEquals(v, a.lockFreeRead(x));
    assertEquals(1, counters.ops(OpKind.READ) - ops, "one one-sided read");
    assertEquals(ObjectLayout.lines(300) * 64L, counters.bytes(OpKind.READ) - bytes);
    assertEquals(0, counters.ops(OpKind.RPC) - rpcs, "no RPC");
  }

  @Test
  void aParticipantThatIsDownAbortsWithUnreachableAndUnlocksTheOthers() throws Exception {
    start();
    FatPointer[] p = twoServers(num(1), num(2));
    int down = a.view(p[1].region()).primary();
    Transaction t = a.txBegin();
    t.txRead(p[0]);
    t.txRead(p[1]);
    t.txWrite(p[0], num(10));
    t.txWrite(p[1], num(20));
    MemoryServer victim =
        cluster.servers.stream().filter(m -> m.serverId() == down).findFirst().orElseThrow();
    cluster.servers.remove(victim);
    victim.close();
    TxResult r = t.txCommit();
    assertEquals(TxResult.Reason.UNREACHABLE, r.reason(), r.detail());
    // The live participant got ABORT (txCommit waits for its answer): its lock is gone now, not
    // after a lease (probe does not wait out a lock).
    assertEquals(1, a.probe(p[0]) >= 0 ? 1 : 0, "still locked: ABORT did not reach the primary");
    Transaction u = a.txBegin();
    u.txWrite(p[0], num(11));
    TxResult ur = u.txCommit();
    assertTrue(ur.committed(), ur.detail());
    assertEquals(11, num(a.lockFreeRead(p[0])));
  }

  @Test
  void aRegionLostWithARestartedPrimaryAnswersDataLost() throws Exception {
    start();
    FatPointer x = make(a, num(5));
    int primary = a.view(x.region()).primary();
    MemoryServer victim =
        cluster.servers.stream().filter(m -> m.serverId() == primary).findFirst().orElseThrow();
    String name = victim.name();
    cluster.servers.remove(victim);
    victim.close();
    // Its log on disk would rebuild the region (TxLogTest): without it, the region is lost.
    try (var files = java.nio.file.Files.walk(dir)) {
      for (Path f :
          files
              .filter(f -> f.getFileName().toString().equals("region-" + x.region() + ".log"))
              .toList()) {
        java.nio.file.Files.delete(f);
      }
    }
    MemoryServer back = cluster.startServer(name);
    assertEquals(primary, back.serverId(), "the same server, a new process");
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    FerriteException e = assertThrows(FerriteException.class, () -> fresh.lockFreeRead(x));
    assertEquals(ErrorCode.DATA_LOST, e.code(), e.getMessage());
    Transaction t = fresh.txBegin();
    assertEquals(
        ErrorCode.DATA_LOST, assertThrows(FerriteException.class, () -> t.txAlloc(8, x)).code());
  }
}
