package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The kv operation log under {@code always}: a memory server (its own JVM) is SIGKILLed during a
 * stream of puts (one writer; then concurrent writers, pipelined putAsync and multiPut included, so
 * acknowledgements come from the group commit), restarted on the same directory, and every write
 * that was acknowledged before the kill is found again (the log is replayed before the server
 * serves).
 */
@Tag("multiprocess")
class KvMultiProcessTest extends ProcessClusterTest {
  static final String CLUSTER = "kv-mp-test";

  private FerriteClient client() {
    return tcpClient("kv-mp-test");
  }

  private boolean serverAlive() {
    return CliProcesses.oneServerAlive(port, credentials);
  }

  /** Starts the master and the server, waits for it; returns the server's process. */
  private Process startCluster() throws Exception {
    newCluster(CLUSTER, "ferrite-kv-mp-");
    startMaster("master", "server.dead.timeout=1s");
    Process server = startServer("s1", "16m", "0");
    await("an ALIVE server", this::serverAlive);
    return server;
  }

  static final TableOptions DURABLE =
      TableOptions.DEFAULTS
          .withShards(4)
          .withSlotsPerShard(8192)
          .withExtents(1 << 20, 4)
          .withLimits(64, 1024)
          .withDurability(TableOptions.Durability.ALWAYS);

  @Test
  void everyAcknowledgedPutSurvivesASigkilledServerUnderAlways() throws Exception {
    Process server = startCluster();
    KvTable t = new KvClient(client()).createTable("durable", DURABLE);
    List<Integer> acked = new CopyOnWriteArrayList<>();
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              for (int i = 0; !stop.get(); i++) {
                try {
                  t.put(b("key-" + i), b("value-" + i));
                  acked.add(i);
                } catch (RuntimeException e) {
                  return; // the server died under this put: its outcome is unknown
                }
              }
            },
            "kv-mp-writer");
    writer.start();
    await("200 acknowledged puts", () -> acked.size() >= 200);
    server.destroyForcibly().waitFor(); // SIGKILL, mid-stream
    writer.join(30_000);
    stop.set(true);
    writer.join();
    int n = acked.size();
    startServer("s1", "16m", "0");
    await("the restarted server ALIVE", this::serverAlive);

    KvTable again = new KvClient(client()).table("durable");
    for (int i : acked) {
      byte[] v = await("key-" + i + " readable", () -> again.get(b("key-" + i)));
      assertArrayEquals(b("value-" + i), v, "acknowledged put " + i + " of " + n + "\n" + logs());
    }
    assertTrue(n >= 200, "acknowledged: " + n);
  }

  @Test
  void everyAcknowledgedWriteOfConcurrentPipelinedWritersSurvivesASigkill() throws Exception {
    Process server = startCluster();
    KvTable t = new KvClient(client()).createTable("durable", DURABLE);
    // Acknowledged writes: key -> value, for keys written once; and for overwritten keys the
    // highest acknowledged sequence (a later unacknowledged write may have landed too).
    Map<String, String> once = new ConcurrentHashMap<>();
    Map<Integer, Integer> overwritten = new ConcurrentHashMap<>();
    AtomicInteger acks = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
    List<Thread> writers = new ArrayList<>();
    // Two writers of blocking puts.
    for (int w = 0; w < 2; w++) {
      String prefix = "sync" + w + "-";
      writers.add(
          new Thread(
              () -> {
                for (int i = 0; !stop.get(); i++) {
                  try {
                    t.put(b(prefix + i), b("v" + i));
                  } catch (RuntimeException e) {
                    return; // the server died under this put: its outcome is unknown
                  }
                  once.put(prefix + i, "v" + i);
                  acks.incrementAndGet();
                }
              },
              "kv-mp-sync-" + w));
    }
    // A pipelining writer: up to 32 putAsync in flight, half of them overwriting 8 keys.
    writers.add(
        new Thread(
            () -> {
              ArrayDeque<CompletableFuture<Boolean>> window = new ArrayDeque<>();
              for (int i = 0; !stop.get(); i++) {
                int seq = i;
                CompletableFuture<Boolean> f;
                if (i % 2 == 0) {
                  String k = "async-" + i;
                  f = t.putAsync(b(k), b("v" + i));
                  f.thenRun(
                      () -> {
                        once.put(k, "v" + seq);
                        acks.incrementAndGet();
                      });
                } else {
                  int k = i % 16;
                  f = t.putAsync(b("over-" + k), b(Integer.toString(seq)));
                  f.thenRun(
                      () -> {
                        overwritten.merge(k, seq, Math::max);
                        acks.incrementAndGet();
                      });
                }
                window.add(f);
                while (window.size() >= 32) {
                  try {
                    window.poll().get(30, TimeUnit.SECONDS);
                  } catch (Exception e) {
                    return;
                  }
                }
              }
            },
            "kv-mp-async"));
    // A writer of multiPuts of 8 pairs.
    writers.add(
        new Thread(
            () -> {
              for (int i = 0; !stop.get(); i++) {
                List<byte[]> ks = new ArrayList<>();
                List<byte[]> vs = new ArrayList<>();
                for (int j = 0; j < 8; j++) {
                  ks.add(b("multi-" + i + "-" + j));
                  vs.add(b("m" + i + "-" + j));
                }
                try {
                  t.multiPut(ks, vs);
                } catch (RuntimeException e) {
                  return;
                }
                for (int j = 0; j < 8; j++) {
                  once.put("multi-" + i + "-" + j, "m" + i + "-" + j);
                }
                acks.addAndGet(8);
              }
            },
            "kv-mp-multi"));
    for (Thread w : writers) {
      w.setUncaughtExceptionHandler((th, e) -> unexpected.add(e));
      w.start();
    }
    await("1000 acknowledged writes", () -> acks.get() >= 1000);
    server.destroyForcibly().waitFor(); // SIGKILL, mid-stream
    for (Thread w : writers) {
      w.join(60_000);
    }
    stop.set(true);
    for (Thread w : writers) {
      w.join();
    }
    assertTrue(unexpected.isEmpty(), "writers failed: " + unexpected);
    startServer("s1", "16m", "0");
    await("the restarted server ALIVE", this::serverAlive);

    KvTable again = new KvClient(client()).table("durable");
    int n = once.size();
    for (Map.Entry<String, String> e : once.entrySet()) {
      byte[] v = await(e.getKey() + " readable", () -> again.get(b(e.getKey())));
      assertArrayEquals(
          b(e.getValue()), v, "acknowledged write " + e.getKey() + " of " + n + "\n" + logs());
    }
    for (Map.Entry<Integer, Integer> e : overwritten.entrySet()) {
      byte[] v =
          await("over-" + e.getKey() + " readable", () -> again.get(b("over-" + e.getKey())));
      int seq = Integer.parseInt(new String(v, StandardCharsets.UTF_8));
      assertTrue(
          seq >= e.getValue(),
          "over-" + e.getKey() + " holds " + seq + ", older than acknowledged " + e.getValue());
    }
    assertTrue(acks.get() >= 1000, "acknowledged: " + acks.get());
  }
}
