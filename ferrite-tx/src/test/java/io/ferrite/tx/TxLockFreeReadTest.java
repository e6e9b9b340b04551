package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Lock-free reads under concurrent writers: objects of 11 cache lines and of one are rewritten by
 * transactions that fill every payload byte with one value, so a copy that mixes two writes (a torn
 * read, or a read of a locked object mid-apply) shows two values. Readers check that every copy
 * they are given has one value throughout. Over the local fabric every read is torn on purpose.
 */
@ExtendWith(SeedExtension.class)
class TxLockFreeReadTest {
  static final int SIZE = 600;

  @TempDir Path dir;
  @AutoClose TxCluster cluster;

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void everyLockFreeReadIsOneCommittedImage(boolean real, TestSeed seed) throws Exception {
    cluster = new TxCluster(dir, 1, real);
    TxClient c = new TxClient(cluster.client());
    byte[] zero = new byte[SIZE];
    FatPointer first = TxCommitTest.make(c, zero);
    Transaction t0 = c.txBegin();
    FatPointer second = t0.txAlloc(SIZE, first);
    assertTrue(t0.txCommit().committed());
    // One-line objects too: a tear inside their only line leaves the header's half intact, so only
    // the checksum tells (no later line version to disagree).
    Transaction t1 = c.txBegin();
    FatPointer third = t1.txAlloc(ObjectLayout.FIRST_PAYLOAD, first);
    FatPointer fourth = t1.txAlloc(ObjectLayout.FIRST_PAYLOAD, first);
    assertTrue(t1.txCommit().committed());
    List<FatPointer> objects = List.of(first, second, third, fourth);
    // real: the client reads over shm (it maps the region file), not tcp.
    assertEquals(real, c.ferrite().connection(c.view(first.region()).primary()).mapsRegions());
    if (!real) {
      cluster.network.faults().tearWait(Duration.ofMillis(1));
      cluster.network.faults().tearReads(true);
    }
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong reads = new AtomicLong();
    CountDownLatch writersDone = new CountDownLatch(2);
    try (TestThreads bg = new TestThreads(() -> done.set(true))) {
      for (int w = 0; w < 2; w++) {
        Random random = new Random(seed.value() + w);
        TxClient wc = new TxClient(cluster.client());
        bg.start(
            "writer-" + w,
            () -> {
              try {
                for (int i = 0; i < 300 && !done.get(); i++) {
                  FatPointer p = objects.get(random.nextInt(objects.size()));
                  Transaction t = wc.txBegin();
                  byte[] now = t.txRead(p);
                  checkUniform(now, "a transactional read");
                  byte[] next = new byte[p.size()];
                  Arrays.fill(next, (byte) (now[0] + 1 + random.nextInt(100)));
                  t.txWrite(p, next);
                  t.txCommit();
                }
              } finally {
                writersDone.countDown();
              }
            });
      }
      for (int r = 0; r < 2; r++) {
        TxClient rc = new TxClient(cluster.client());
        bg.start(
            "reader-" + r,
            () -> {
              while (!done.get()) {
                for (FatPointer p : objects) {
                  checkUniform(rc.lockFreeRead(p), "a lock-free read");
                  reads.incrementAndGet();
                }
              }
            });
      }
      while (!writersDone.await(50, TimeUnit.MILLISECONDS) && !done.get()) {
        Thread.onSpinWait();
      }
      done.set(true);
    }
    assertTrue(reads.get() > 0);
  }

  static void checkUniform(byte[] b, String what) {
    for (int i = 1; i < b.length; i++) {
      assertEquals(b[0], b[i], what + " mixes two writes at byte " + i);
    }
  }
}
