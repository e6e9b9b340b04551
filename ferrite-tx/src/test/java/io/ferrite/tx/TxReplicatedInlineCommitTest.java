package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * With {@code tx.replicas} 2 the commit-protocol requests are served on the thread that received
 * them too, once the primary's connections to the region's backups are open (docs/TX.md,
 * "Measurements"): the records to the backups are sent from there and the answer leaves when the
 * backups acknowledged them. They were handed to a dispatch thread on every commit of a region with
 * backups. Each commit is at its backup when it returns, as before.
 */
@ExtendWith(SeedExtension.class)
class TxReplicatedInlineCommitTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;

  @Test
  void aSingleServerCommitWithABackupIsServedInlineAndIsAtTheBackup(Random random)
      throws Exception {
    cluster = new TxCluster(dir, 2, true, 2);
    TxClient a = new TxClient(cluster.client("shm"));
    FatPointer x = TxCommitTest.make(a, TxCommitTest.num(random.nextLong()));
    TxPlacement p = a.placement(x.region());
    assertEquals(1, p.backups().size(), p.toString());
    int backup = p.backups().get(0);
    for (int i = 0; i < 20; i++) {
      Transaction t = a.txBegin();
      long v = TxCommitTest.num(t.txRead(x));
      byte[] next = TxCommitTest.num(v + 1 + random.nextInt(1000));
      t.txWrite(x, next);
      long before = cluster.inlineCalls();
      assertTrue(t.txCommit().committed(), "commit " + i);
      assertEquals(
          2,
          cluster.inlineCalls() - before,
          "commit "
              + i
              + ": COMMIT_LOCAL at the primary and its LOCAL record at the backup, each served"
              + " inline");
      // Acknowledged only once the backup held it.
      assertArrayEquals(next, TxCluster.backupCopy(cluster, backup, x).payload(), "commit " + i);
    }
  }

  @Test
  void aTwoServerCommitWithBackupsIsServedInline(Random random) throws Exception {
    cluster = new TxCluster(dir, 0, true, 2);
    // A lock lease of 60 s: the decider's truncation (every lease / 4: docs/TX.md "Truncation")
    // asks about its pins and sends UNPIN records, served inline too, which this count is not
    // about.
    for (String name : java.util.List.of("tx0", "tx1")) {
      cluster.startServer(name, java.util.Map.of(TxConfig.LOCK_LEASE, "60s"));
    }
    cluster.awaitServers(2);
    TxClient a = new TxClient(cluster.client("shm"));
    TxClient b = new TxClient(cluster.client("shm"));
    FatPointer x = TxCommitTest.make(a, TxCommitTest.num(random.nextLong()));
    FatPointer y = TxCommitTest.make(b, TxCommitTest.num(random.nextLong()));
    int px = a.view(x.region()).primary();
    int py = a.view(y.region()).primary();
    assertNotEquals(px, py, "b's first region is on the other server");
    for (int i = 0; i < 20; i++) {
      Transaction t = a.txBegin();
      long vx = TxCommitTest.num(t.txRead(x));
      long vy = TxCommitTest.num(t.txRead(y));
      byte[] nx = TxCommitTest.num(vx + vy);
      byte[] ny = TxCommitTest.num(random.nextLong());
      t.txWrite(x, nx);
      t.txWrite(y, ny);
      long before = cluster.inlineCalls();
      assertTrue(t.txCommit().committed(), "commit " + i);
      // Once both objects read the new values (a read waits while they are locked), the other
      // participant applied, after its backup acknowledged its COMMIT record. (Over shm its COMMIT
      // is waited for, docs/TX.md "Commit"; were it not, the reads would wait.)
      assertArrayEquals(nx, b.lockFreeRead(x), "commit " + i);
      assertArrayEquals(ny, b.lockFreeRead(y), "commit " + i);
      // LOCK at both primaries, a LOCK record at each one's backup; COMMIT at both, the decider's
      // DECIDE record and the other's COMMIT record at their backups: 8, none handed off. (An
      // inline call is counted once its handler returned, which may be just after its object was
      // unlocked: wait, bounded, for the count; one handed off never reaches it.)
      long served = cluster.inlineCalls() - before;
      for (int w = 0; w < 2000 && served < 8; w++) {
        Thread.sleep(1);
        served = cluster.inlineCalls() - before;
      }
      assertEquals(8, served, "commit " + i + ": every request served inline");
      assertArrayEquals(nx, TxCluster.backupCopy(cluster, py, x).payload(), "commit " + i);
      assertArrayEquals(ny, TxCluster.backupCopy(cluster, px, y).payload(), "commit " + i);
    }
  }
}
