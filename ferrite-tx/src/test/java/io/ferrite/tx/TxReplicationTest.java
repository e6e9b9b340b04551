package io.ferrite.tx;

import static io.ferrite.tx.TxCommitTest.num;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replication and recovery (docs/TX.md, "Replication"): three memory servers, {@code tx.replicas}
 * 2, local fabric. Placements, committed writes on the backup copy, a stopped primary replaced by
 * its promoted backup (every committed value there, nothing left locked, the allocator rebuilt, the
 * incarnation floor), and transactions pending at the moment a decider or another participant
 * stopped, resolved both ways.
 */
@ExtendWith(SeedExtension.class)
class TxReplicationTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;
  TxClient a;
  TxClient b;

  void start() throws Exception {
    cluster = new TxCluster(dir, 3, false, 2);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
  }

  /** A region's placement at the master: primary, backups, epoch. */
  TxPlacement placement(int region) {
    return new TxClient(cluster.client()).placement(region);
  }

  /** The backup {@code server}'s copy of {@code p}: its version and payload (verified). */
  TxClient.Copy backupCopy(int server, FatPointer p) {
    return TxCluster.backupCopy(cluster, server, p);
  }

  void stopServer(int id) {
    MemoryServer victim =
        cluster.servers.stream().filter(m -> m.serverId() == id).findFirst().orElseThrow();
    cluster.servers.remove(victim);
    victim.close();
  }

  /**
   * Two objects whose regions have distinct primaries; [0] is in the lower region (the decider).
   */
  FatPointer[] twoPrimaries(byte[] x, byte[] y) {
    FatPointer px = TxCommitTest.make(a, x);
    FatPointer py = TxCommitTest.make(b, y);
    assertNotEquals(placement(px.region()).primary(), placement(py.region()).primary());
    return px.region() < py.region() ? new FatPointer[] {px, py} : new FatPointer[] {py, px};
  }

  @Test
  void everyRegionHasItsCopiesOnDistinctServers() throws Exception {
    start();
    for (int i = 0; i < 5; i++) {
      FatPointer p = TxCommitTest.make(new TxClient(cluster.client()), num(i));
      TxPlacement pl = placement(p.region());
      assertEquals(1, pl.backups().size(), pl.toString());
      assertFalse(pl.backups().contains(pl.primary()), pl.toString());
      assertEquals(1, pl.epoch(), pl.toString());
    }
  }

  @Test
  void aCommittedWriteIsOnTheBackupCopy(Random random) throws Exception {
    start();
    byte[] v1 = TxCommitTest.bytes(random, 300);
    FatPointer p = TxCommitTest.make(a, v1);
    int backup = placement(p.region()).backups().get(0);
    TxClient.Copy c = backupCopy(backup, p);
    assertArrayEquals(v1, c.payload());
    assertEquals(TxBankTest.versionOf(a, p), c.version());
    // A two-server commit reaches the backups of both regions.
    FatPointer[] q = twoPrimaries(num(1), num(2));
    Transaction t = a.txBegin();
    t.txWrite(q[0], num(10));
    t.txWrite(q[1], num(20));
    assertTrue(t.txCommit().committed());
    assertEquals(10, num(backupCopy(placement(q[0].region()).backups().get(0), q[0]).payload()));
    assertEquals(20, num(backupCopy(placement(q[1].region()).backups().get(0), q[1]).payload()));
  }

  @Test
  void aStoppedPrimaryIsReplacedByItsBackupWithEveryCommittedValue(Random random) throws Exception {
    start();
    List<FatPointer> live = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    FatPointer first = TxCommitTest.make(a, num(0));
    live.add(first);
    values.add(num(0));
    for (int i = 1; i < 40; i++) {
      byte[] v = TxCommitTest.bytes(random, 1 + random.nextInt(200));
      Transaction t = a.txBegin();
      FatPointer p = t.txAlloc(v.length, first);
      t.txWrite(p, v);
      assertTrue(t.txCommit().committed());
      live.add(p);
      values.add(v);
    }
    // Freed objects: their slots must come back free, not live.
    for (int i = 30; i < 40; i++) {
      Transaction t = a.txBegin();
      t.txFree(live.get(i));
      assertTrue(t.txCommit().committed());
    }
    List<FatPointer> freed = new ArrayList<>(live.subList(30, 40));
    live = new ArrayList<>(live.subList(0, 30));
    values = new ArrayList<>(values.subList(0, 30));
    // A pointer handed out for an allocation that never commits (the transaction is abandoned).
    FatPointer stale = a.txBegin().txAlloc(8, first);
    TxPlacement before = placement(first.region());
    stopServer(before.primary());
    // A new transaction commits once the master declared the primary DEAD (the client waits).
    long stopped = System.nanoTime();
    Transaction t = b.txBegin();
    t.txWrite(first, num(1));
    assertTrue(t.txCommit().committed());
    System.out.println(
        "TxReplicationTest: a commit "
            + (System.nanoTime() - stopped) / 1_000_000
            + " ms after the primary stopped");
    TxPlacement after = placement(first.region());
    assertEquals(before.backups().get(0), after.primary());
    assertTrue(after.epoch() > before.epoch(), after.toString());
    values.set(0, num(1));
    for (int i = 0; i < live.size(); i++) {
      assertArrayEquals(values.get(i), b.lockFreeRead(live.get(i)), live.get(i).toString());
    }
    for (FatPointer f : freed) {
      assertEquals(
          ErrorCode.NOT_FOUND,
          assertThrows(FerriteException.class, () -> b.lockFreeRead(f)).code());
    }
    // The allocator is rebuilt: nothing handed out twice, no live object overwritten.
    Set<Long> taken = new HashSet<>();
    live.forEach(p -> taken.add(p.offset()));
    List<FatPointer> fresh = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      Transaction u = b.txBegin();
      int size = i % 3 == 0 ? 8 : 8 + random.nextInt(193);
      FatPointer p = u.txAlloc(size, first);
      u.txWrite(p, num(1000 + i));
      assertTrue(u.txCommit().committed());
      assertTrue(taken.add(p.offset()), "slot handed out twice: " + p);
      fresh.add(p);
    }
    assertTrue(
        fresh.stream().anyMatch(p -> freed.stream().anyMatch(f -> f.offset() == p.offset())),
        "a freed slot is reused");
    for (int i = 0; i < live.size(); i++) {
      assertArrayEquals(values.get(i), b.lockFreeRead(live.get(i)), live.get(i).toString());
    }
    for (int i = 0; i < fresh.size(); i++) {
      assertEquals(1000 + i, num(b.lockFreeRead(fresh.get(i))));
    }
    // The incarnation floor: the stale pointer's slot holds another incarnation now.
    assertTrue(fresh.stream().anyMatch(p -> p.offset() == stale.offset()), "stale slot reused");
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(FerriteException.class, () -> b.lockFreeRead(stale)).code());
  }

  /** Waits until {@code p} reads unlocked and returns its value (the reaper resolved it). */
  long settled(TxClient c, FatPointer p) {
    for (int i = 0; ; i++) {
      long v = c.probe(p);
      if (v >= 0 || i > 2000) {
        return num(c.lockFreeRead(p));
      }
      java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
    }
  }

  /** After the pending transaction resolved: both objects unlocked and writable again. */
  void assertWritable(FatPointer[] p) {
    Transaction u = b.txBegin();
    u.txWrite(p[0], num(7));
    u.txWrite(p[1], num(8));
    TxResult r = u.txCommit();
    assertTrue(r.committed(), r.detail());
    assertEquals(7, num(b.lockFreeRead(p[0])));
    assertEquals(8, num(b.lockFreeRead(p[1])));
  }

  @Test
  void aDeciderStoppedAfterItsDecisionReachedItsBackupCommitsEverywhere() throws Exception {
    start();
    FatPointer[] p = twoPrimaries(num(1), num(2));
    Transaction t = a.txBegin();
    t.txWrite(p[0], num(10));
    t.txWrite(p[1], num(20));
    assertTrue(t.commit(Transaction.Stop.AFTER_DECIDER).committed());
    stopServer(placement(p[0].region()).primary());
    assertEquals(10, settled(b, p[0]));
    assertEquals(20, settled(b, p[1]), "the other participant applied the decision");
    assertWritable(p);
  }

  @Test
  void aDeciderStoppedAfterLockBeforeDecidingAbortsEverywhere() throws Exception {
    start();
    FatPointer[] p = twoPrimaries(num(1), num(2));
    Transaction t = a.txBegin();
    t.txWrite(p[0], num(10));
    t.txWrite(p[1], num(20));
    t.commit(Transaction.Stop.AFTER_LOCK);
    stopServer(placement(p[0].region()).primary());
    assertEquals(1, settled(b, p[0]), "the promoted decider aborts it");
    assertEquals(2, settled(b, p[1]), "the other participant unlocks");
    assertWritable(p);
  }

  @Test
  void aParticipantStoppedAfterLockIsResolvedByItsPromotedBackupAsTheDeciderSays()
      throws Exception {
    start();
    FatPointer[] p = twoPrimaries(num(1), num(2));
    Transaction t = a.txBegin();
    t.txWrite(p[0], num(10));
    t.txWrite(p[1], num(20));
    assertTrue(t.commit(Transaction.Stop.AFTER_DECIDER).committed());
    stopServer(placement(p[1].region()).primary());
    assertEquals(10, settled(b, p[0]));
    assertEquals(20, settled(b, p[1]), "the promoted backup committed as the decider said");
    assertWritable(p);
  }

  @Test
  void aParticipantStoppedAfterLockWithoutADecisionIsAbortedByItsPromotedBackup() throws Exception {
    start();
    FatPointer[] p = twoPrimaries(num(1), num(2));
    Transaction t = a.txBegin();
    t.txWrite(p[0], num(10));
    t.txWrite(p[1], num(20));
    t.commit(Transaction.Stop.AFTER_LOCK);
    stopServer(placement(p[1].region()).primary());
    assertEquals(1, settled(b, p[0]), "the decider's lease aborts it");
    assertEquals(2, settled(b, p[1]), "the promoted backup aborts it as the decider says");
    assertWritable(p);
  }
}
