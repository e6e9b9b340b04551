package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * With {@code tx.replicas} 1 every request of a two-server commit is served on the thread that
 * received it (docs/TX.md, "Measurements"): nothing is forwarded, so no dispatch-thread hand-off
 * belongs on its path. The non-decider's LOCK was handed off (its decider region is another
 * server's), a hand-off in every two-server commit.
 */
@ExtendWith(SeedExtension.class)
class TxInlineCommitTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;

  @Test
  void everyRequestOfATwoServerCommitIsServedInline(Random random) throws Exception {
    cluster = new TxCluster(dir, 2, true);
    TxClient a = new TxClient(cluster.client("shm"));
    TxClient b = new TxClient(cluster.client("shm"));
    FatPointer x = make(a, random.nextLong());
    FatPointer y = make(b, random.nextLong()); // b's own first region: on the other server
    assertNotEquals(a.view(x.region()).primary(), a.view(y.region()).primary());
    for (int i = 0; i < 20; i++) {
      Transaction t = a.txBegin();
      long vx = num(t.txRead(x));
      long vy = num(t.txRead(y));
      // Each way round: either object's region may be the decider (the lower region id).
      t.txWrite(i % 2 == 0 ? x : y, num(vx + vy));
      t.txWrite(i % 2 == 0 ? y : x, num(random.nextLong()));
      long before = cluster.inlineCalls();
      assertTrue(t.txCommit().committed(), "commit " + i);
      // The other participant's COMMIT is not waited for (its LOCK record is in its log): once
      // both objects read unlocked (a read waits while they are locked), it applied. An inline
      // call is counted once its handler returned, which may be just after its object was
      // unlocked: wait, bounded, for the count; one handed off never reaches it.
      b.lockFreeRead(x);
      b.lockFreeRead(y);
      long served = cluster.inlineCalls() - before;
      for (int w = 0; w < 2000 && served < 4; w++) {
        Thread.sleep(1);
        served = cluster.inlineCalls() - before;
      }
      assertEquals(
          4,
          served,
          "commit " + i + ": LOCK at both primaries and COMMIT at both, each served inline");
    }
  }

  private static FatPointer make(TxClient c, long value) {
    Transaction t = c.txBegin();
    FatPointer p = t.txAlloc(8, null);
    t.txWrite(p, num(value));
    assertTrue(t.txCommit().committed());
    return p;
  }

  private static byte[] num(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, v).array();
  }

  private static long num(byte[] b) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
  }
}
