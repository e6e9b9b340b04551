package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.Threads;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client's writes to one key are applied in issue order, also when pipelined: one thread keeps up
 * to {@link #WINDOW} putAsync and multiPutAsync (now and then a blocking multiPut) in flight to a
 * few keys on two servers, every value carrying an increasing sequence number (values of changing
 * sizes, in and out of line, so some writes create extent regions and are applied by the server's
 * writer threads, others on the receiving thread). Readers never see a key's sequence go backwards,
 * and each key ends with the last value issued for it. Over the local fabric, real tcp and real
 * shm; seeded.
 */
@ExtendWith(SeedExtension.class)
class PipelinedWriteOrderTest {
  static final int KEYS = 6;
  static final int OPS = 3000;
  static final int WINDOW = 128;

  @TempDir Path dir;

  static byte[] key(int k) {
    return ("key-" + k).getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(long seq, Random r) {
    int pad = r.nextInt(8) == 0 ? 100 + r.nextInt(400) : r.nextInt(24);
    return ByteBuffer.allocate(8 + pad).order(ByteOrder.LITTLE_ENDIAN).putLong(seq).array();
  }

  static long seq(byte[] v) {
    return ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"local", "tcp", "shm"})
  void pipelinedWritesToOneKeyApplyInIssueOrder(String fabric, TestSeed seed) throws Exception {
    boolean real = !fabric.equals("local");
    try (KvCluster cluster = new KvCluster(dir, 2, real)) {
      FerriteClient c = real ? cluster.client(fabric) : cluster.client();
      KvTable t =
          new KvClient(c)
              .createTable(
                  "order",
                  TableOptions.DEFAULTS
                      .withShards(4)
                      .withSlotsPerShard(256)
                      .withExtents(8 << 10, 8)
                      .withLimits(64, 1024));
      long[] last = new long[KEYS];
      AtomicBoolean writing = new AtomicBoolean(true);
      AtomicLong reads = new AtomicLong();
      // The writer starts once both readers read: a fast writer finished before they were set up.
      CountDownLatch readersReading = new CountDownLatch(2);
      ExecutorService readers = Executors.newFixedThreadPool(2, Threads.named("order-reader"));
      List<Future<?>> readerDone = new ArrayList<>();
      try {
        for (int i = 0; i < 2; i++) {
          int id = i;
          readerDone.add(
              readers.submit(
                  () -> {
                    // Its own handle and client: a reader on another connection, as a user's.
                    FerriteClient rc = real ? cluster.client(fabric) : cluster.client();
                    KvTable rt = new KvClient(rc).table("order");
                    Random r = new Random(seed.value() * 7 + id);
                    long[] seen = new long[KEYS];
                    boolean counted = false;
                    while (writing.get()) {
                      int k = r.nextInt(KEYS);
                      byte[] v = rt.get(key(k));
                      if (v != null) {
                        long s = seq(v);
                        assertTrue(
                            s >= seen[k],
                            "key " + k + " went back from sequence " + seen[k] + " to " + s);
                        seen[k] = s;
                      }
                      reads.incrementAndGet();
                      if (!counted) {
                        counted = true;
                        readersReading.countDown();
                      }
                    }
                    return null;
                  }));
        }
        assertTrue(readersReading.await(60, TimeUnit.SECONDS), "the readers never read");
        Random r = new Random(seed.value());
        ArrayDeque<CompletableFuture<?>> inFlight = new ArrayDeque<>();
        long seq = 0;
        for (int op = 0; op < OPS; op++) {
          if (r.nextInt(5) == 0) {
            // A multiPut of 2-6 pairs, a key possibly twice: list order is issue order.
            int n = 2 + r.nextInt(5);
            List<byte[]> ks = new ArrayList<>(n);
            List<byte[]> vs = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
              int k = r.nextInt(KEYS);
              ks.add(key(k));
              vs.add(value(++seq, r));
              last[k] = seq;
            }
            if (r.nextInt(4) == 0) {
              // Blocking, with the writes before it still in flight: its last server's
              // MULTI_PUT goes on this thread (a lane only once nothing is in flight), and is
              // still applied after them.
              t.multiPut(ks, vs);
            } else {
              inFlight.add(t.multiPutAsync(ks, vs));
            }
          } else {
            int k = r.nextInt(KEYS);
            inFlight.add(t.putAsync(key(k), value(++seq, r)));
            last[k] = seq;
          }
          while (inFlight.size() >= WINDOW) {
            inFlight.poll().get(60, TimeUnit.SECONDS);
          }
        }
        while (!inFlight.isEmpty()) {
          inFlight.poll().get(60, TimeUnit.SECONDS);
        }
      } finally {
        writing.set(false);
        readers.shutdown();
      }
      for (Future<?> f : readerDone) {
        f.get(60, TimeUnit.SECONDS); // a reader's failure fails the test
      }
      assertTrue(reads.get() > 0, "the readers read nothing");
      for (int k = 0; k < KEYS; k++) {
        if (last[k] == 0) {
          continue;
        }
        byte[] v = t.get(key(k));
        assertNotNull(v, "key " + k);
        assertEquals(last[k], seq(v), "key " + k + " does not hold its last issued value");
      }
    }
  }
}
