package io.ferrite.kv.server;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvCluster;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Overload of the write path: while nothing can be applied (the test holds the service's request
 * lock, as a long compaction would), writes queue on their shard up to {@link KvWrites#MAX_QUEUED};
 * the next is refused with BUSY at once, having changed nothing, while reads (one-sided) and the
 * inline PING are still answered; once the lock is free every queued write is applied and answered.
 */
class WriteOverloadTest {
  @TempDir Path dir;

  @AfterEach
  void clear() {
    KvService.testStarted = null;
  }

  @Test
  void aFullShardQueueRefusesWritesWithBusyAndLosesNothing() throws Exception {
    List<KvService> services = new CopyOnWriteArrayList<>();
    KvService.testStarted = services::add;
    try (KvCluster cluster = new KvCluster(dir, 1)) {
      FerriteClient c = cluster.client();
      KvTable t =
          new KvClient(c)
              .createTable("busy", TableOptions.DEFAULTS.withShards(1).withSlotsPerShard(256));
      t.put(b("before"), b("v"));
      long tableId = t.info().tableId();
      int server = t.info().servers()[0];
      assertEquals(1, services.size());
      Lock stall = services.get(0).requestLock().writeLock();
      List<CompletableFuture<ByteBuffer>> queued = new ArrayList<>();
      // Held by a thread of its own: the local fabric may run a handler on the calling thread,
      // and the write lock's holder could take the read side (a downgrade) and apply inline.
      CountDownLatch held = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      CompletableFuture<Void> holder =
          CompletableFuture.runAsync(
              () -> {
                stall.lock();
                try {
                  held.countDown();
                  release.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                } finally {
                  stall.unlock();
                }
              });
      assertTrue(held.await(60, TimeUnit.SECONDS), "the stalling thread never took the lock");
      try {
        for (int i = 0; i < KvWrites.MAX_QUEUED; i++) {
          queued.add(c.call(server, KvProtocol.SERVER_SERVICE, KvProtocol.PUT, put(tableId, i)));
        }
        // Every one of them is queued (none can be applied): the next is over the bound.
        CompletableFuture<ByteBuffer> refused =
            c.call(server, KvProtocol.SERVER_SERVICE, KvProtocol.PUT, put(tableId, -1));
        ExecutionException e =
            org.junit.jupiter.api.Assertions.assertThrows(
                ExecutionException.class, () -> refused.get(60, TimeUnit.SECONDS));
        assertEquals(ErrorCode.BUSY, FerriteException.unwrap(e).code(), e.toString());
        for (CompletableFuture<ByteBuffer> f : queued) {
          assertFalse(f.isDone(), "a write was answered though none could be applied");
        }
        // Reads do not go through the queue.
        assertTrue(java.util.Arrays.equals(b("v"), t.get(b("before"))));
      } finally {
        release.countDown();
      }
      holder.get(60, TimeUnit.SECONDS);
      for (CompletableFuture<ByteBuffer> f : queued) {
        try {
          f.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          // On a slow machine the client may stop waiting (its RPC deadline) before the stall
          // ends; the server still applies the write, as the reads below check.
          assertEquals(ErrorCode.TIMEOUT, FerriteException.unwrap(e).code(), e.toString());
        }
      }
      // Applied in arrival order: each of the 16 keys ends with the last value queued for it.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      for (int k = 0; k < KEYS; k++) {
        byte[] want = b("v" + (KvWrites.MAX_QUEUED - KEYS + k));
        while (!java.util.Arrays.equals(want, t.get(b("k" + k)))) {
          assertTrue(System.nanoTime() < deadline, "key k" + k + " never got its last value");
          Thread.sleep(10);
        }
      }
      assertEquals(null, t.get(b("refused")), "the refused write was applied");
    }
  }

  /** Keys the queued writes overwrite (a small table: no resize while the writes are stalled). */
  static final int KEYS = 16;

  private static ByteBuffer put(long tableId, int i) {
    return new Wire.Writer()
        .i64(tableId)
        .i32(0)
        .u8(KvProtocol.MODE_PUT)
        .bytes(b(i < 0 ? "refused" : "k" + (i % KEYS)))
        .bytes(b("v" + i))
        .bytes(new byte[0])
        .toBuffer();
  }

  private static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }
}
