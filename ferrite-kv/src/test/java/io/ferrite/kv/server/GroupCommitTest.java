package io.ferrite.kv.server;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvCluster;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Group commit of the kv op log under real writes: an {@code always} write is answered only after
 * the fsync that covers it (an injected fsync that blocks holds every answer, though the writes are
 * applied and readable), and concurrent writers share fsyncs.
 */
@ExtendWith(SeedExtension.class)
class GroupCommitTest {
  static final TableOptions ALWAYS =
      TableOptions.DEFAULTS
          .withShards(4)
          .withSlotsPerShard(1024)
          .withDurability(TableOptions.Durability.ALWAYS);

  @TempDir Path dir;

  /** An fsync that can be held (each call waits while {@link #hold} is set) and counts calls. */
  static final class HeldFsync implements OpLog.Fsync {
    final AtomicLong calls = new AtomicLong();
    final Semaphore entered = new Semaphore(0);
    volatile CountDownLatch hold;
    volatile long delayNanos;

    @Override
    public void force(FileChannel ch) throws IOException {
      calls.incrementAndGet();
      CountDownLatch h = hold;
      if (h != null) {
        entered.release();
        try {
          h.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("held fsync interrupted");
        }
      }
      if (delayNanos > 0) {
        LockSupport.parkNanos(delayNanos); // a disk's fsync, so that writers pile up behind it
      }
      ch.force(false);
    }
  }

  @AfterEach
  void clear() {
    KvService.testFsync = null;
  }

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  /** Waits (bounded, not timed: a liveness limit) until a one-sided get reads {@code v}. */
  private static void awaitApplied(KvTable t, byte[] k, byte[] v) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!Arrays.equals(t.get(k), v)) {
      if (System.nanoTime() > deadline) {
        fail("put of " + new String(k, UTF_8) + " was never applied");
      }
      LockSupport.parkNanos(100_000);
    }
  }

  /** Room for 4 shards of 16 MiB extents on one server (shard regions count against it). */
  static final java.util.Map<String, String> ROOM =
      java.util.Map.of(io.ferrite.kernel.config.FerriteConfig.CAPACITY_DRAM, "128m");

  @ParameterizedTest(name = "real={0}")
  @ValueSource(booleans = {false, true})
  void noAlwaysWriteIsAnsweredWhileTheFsyncCoveringItIsBlocked(boolean real) throws Exception {
    HeldFsync fsync = new HeldFsync();
    KvService.testFsync = fsync;
    try (KvCluster cluster = new KvCluster(dir, 1, real, ROOM)) {
      KvTable t =
          new KvClient(real ? cluster.client("tcp") : cluster.client()).createTable("held", ALWAYS);
      t.put(b("gone"), b("soon"));
      CountDownLatch hold = new CountDownLatch(1);
      fsync.hold = hold;
      List<CompletableFuture<Boolean>> puts = new ArrayList<>();
      CompletableFuture<List<Boolean>> multi;
      CompletableFuture<Boolean> delete;
      try {
        for (int i = 0; i < 48; i++) {
          puts.add(t.putAsync(b("k" + i), b("v" + i)));
        }
        List<byte[]> mk = new ArrayList<>();
        List<byte[]> mv = new ArrayList<>();
        for (int i = 48; i < 64; i++) {
          mk.add(b("k" + i));
          mv.add(b("v" + i));
        }
        multi = t.multiPutAsync(mk, mv);
        delete = t.deleteAsync(b("gone"));
        // Every write is applied (one-sided gets read it) and the syncer sits in the held fsync...
        for (int i = 0; i < 64; i++) {
          awaitApplied(t, b("k" + i), b("v" + i));
        }
        while (t.get(b("gone")) != null) {
          LockSupport.parkNanos(100_000);
        }
        assertTrue(fsync.entered.tryAcquire(60, TimeUnit.SECONDS), "the syncer never fsynced");
        // ... and yet no answer left: acknowledging before the fsync would complete these.
        for (CompletableFuture<Boolean> f : puts) {
          assertFalse(f.isDone(), "a put was answered while its fsync was blocked");
        }
        assertFalse(multi.isDone(), "a multiPut was answered while its fsync was blocked");
        assertFalse(delete.isDone(), "a delete was answered while its fsync was blocked");
      } finally {
        // Released whatever happened: a held fsync would hold the servers' shutdown too.
        fsync.hold = null;
        hold.countDown();
      }
      for (CompletableFuture<Boolean> f : puts) {
        assertTrue(f.get(60, TimeUnit.SECONDS), "the key was new");
      }
      assertEquals(16, multi.get(60, TimeUnit.SECONDS).stream().filter(c -> c).count());
      assertTrue(delete.get(60, TimeUnit.SECONDS));
    }
  }

  @Test
  void concurrentAlwaysWritersShareFsyncs(TestSeed seed) throws Exception {
    HeldFsync fsync = new HeldFsync();
    fsync.delayNanos = 500_000;
    KvService.testFsync = fsync;
    int writers = 16;
    int each = 60;
    try (KvCluster cluster = new KvCluster(dir, 1, false, ROOM)) {
      KvTable t = new KvClient(cluster.client()).createTable("shared", ALWAYS);
      long before = fsync.calls.get();
      ExecutorService pool = Executors.newFixedThreadPool(writers, Threads.named("always-writer"));
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
          int id = w;
          done.add(
              pool.submit(
                  () -> {
                    Random r = new Random(seed.value() * 31 + id);
                    for (int i = 0; i < each; i++) {
                      byte[] k = b("w" + id + "-" + r.nextInt(20));
                      byte[] v = b("v" + i);
                      t.put(k, v);
                      // Answered, so durable, so readable.
                      assertArrayEquals(v, t.get(k));
                    }
                    return null;
                  }));
        }
        for (Future<?> f : done) {
          f.get(120, TimeUnit.SECONDS); // a writer's failure fails the test
        }
      } finally {
        pool.shutdownNow();
      }
      long fsyncs = fsync.calls.get() - before;
      long writes = (long) writers * each;
      assertTrue(fsyncs >= 1, "no fsync at all for " + writes + " always writes");
      assertTrue(
          fsyncs * 4 <= writes,
          fsyncs + " fsyncs for " + writes + " concurrent always writes (expected: shared)");
    }
  }
}
