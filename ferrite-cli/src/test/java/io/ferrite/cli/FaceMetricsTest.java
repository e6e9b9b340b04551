package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.ops.Metrics;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.kernel.testing.PrometheusText;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import io.ferrite.nodes.Nodes;
import io.micrometer.core.instrument.Tag;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The faces' meters end to end: a master and a memory server with every face installed and metrics
 * on, a client that counts; after kv, nodes and memory operations, the master's and the server's
 * {@code /metrics} (scraped over HTTP, parsed) and the client's registry show them.
 */
@ExtendWith(SeedExtension.class)
class FaceMetricsTest {
  @TempDir Path dir;

  private static Map<String, String> face(String face, String op) {
    Map<String, String> m = new HashMap<>();
    m.put("face", face);
    m.put("op", op);
    return m;
  }

  @Test
  void kvNodesAndMemoryOperationsAreCountedWhereTheyHappen(Random random) throws Exception {
    int n = 10 + random.nextInt(10);
    try (ClusterHarness c =
        new ClusterHarness(
            dir,
            new Credentials(
                "facemetrics", "0123456789abcdef-face-metrics".getBytes(StandardCharsets.UTF_8)),
            true,
            Map.of(
                FerriteConfig.REGION_SIZE, "64m",
                FerriteConfig.BLOCK_SIZE, "1m",
                FerriteConfig.CAPACITY_DRAM, "512m",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.METRICS_PORT, "0"))) {
      c.startMaster();
      MemoryServer server = c.startServer("s1");
      c.awaitServers(1);
      Metrics clientMetrics = new Metrics(List.of(Tag.of("process", "client")));
      FerriteClient client =
          c.client(
              ClientOptions.builder(c.credentials.as(Role.CLIENT))
                  .fabric("tcp")
                  .metrics(clientMetrics.registry()));

      // kv: a durable table (its puts go through the op log's group commit), puts then gets.
      KvTable t =
          new KvClient(client)
              .createTable(
                  "metrics",
                  TableOptions.DEFAULTS
                      .withShards(2)
                      .withDurability(TableOptions.Durability.ALWAYS));
      for (int i = 0; i < n; i++) {
        t.put(("k" + i).getBytes(StandardCharsets.UTF_8), new byte[] {(byte) i});
      }
      for (int i = 0; i < n; i++) {
        assertArrayEquals(new byte[] {(byte) i}, t.get(("k" + i).getBytes(StandardCharsets.UTF_8)));
      }

      // nodes: small values (kept in the master's metadata), then lookups.
      Nodes nodes = new Nodes(client);
      nodes.createTable("/t", false);
      for (int i = 0; i < n; i++) {
        nodes.put("/t/m" + i, new byte[] {(byte) i});
      }
      for (int i = 0; i < n; i++) {
        nodes.lookupAtMaster("/t/m" + i);
      }

      // memory: a namespace, a reserve, an allocation mapped and written and read.
      RStore store = new RStore(client);
      Namespace ns = store.createNamespace("metrics");
      ns.reserve(2L << 20);
      RAddress a = ns.alloc(1 << 16, MemoryFlags.ALLOC_DEFAULT);
      try (Mapping m = a.map(MemoryFlags.MAP_DEFAULT)) {
        for (int i = 0; i < n; i++) {
          m.writeSync(0, ByteBuffer.wrap(new byte[] {(byte) i}));
          m.readSync(0, ByteBuffer.allocate(1));
        }
      }

      PrometheusText s = PrometheusText.scrape(server.ops());
      assertTrue(s.value("ferrite_face_ops_total", face("kv", "put")) >= n);
      // One put in 16 is timed (SampledTimer): at least the first, never more than all.
      double timed = s.value("ferrite_face_latency_seconds_count", face("kv", "put"));
      assertTrue(timed >= 1 && timed <= n, "timed puts: " + timed + " of " + n);
      assertEquals(
          1, s.find("ferrite_face_latency_seconds", Map.of("op", "put", "quantile", "0.5")).size());
      assertTrue(s.value("ferrite_log_records_total", Map.of("log", "kv")) >= n);
      assertTrue(s.value("ferrite_log_fsyncs_total", Map.of("log", "kv")) > 0);
      assertTrue(
          s.value(
                  "ferrite_rpc_requests_total",
                  Map.of("service", "kv", "opcode", "3", "outcome", "ok"))
              >= n,
          "kv PUT (opcode 3) RPCs");
      // The table's shards are service regions of the kv face: shown apart from blocks.
      long kvBytes = server.serviceBytes().get("dram").get("kv");
      assertTrue(kvBytes > 0);
      assertEquals(
          (double) kvBytes,
          s.value(
              "ferrite_capacity_bytes", Map.of("class", "dram", "use", "service", "face", "kv")));
      assertEquals(
          0.0,
          s.value(
              "ferrite_capacity_bytes", Map.of("class", "disk", "use", "service", "face", "kv")));

      PrometheusText m = PrometheusText.scrape(c.master.ops());
      assertTrue(
          m.value("ferrite_capacity_bytes", Map.of("class", "dram", "use", "service", "face", "kv"))
              >= kvBytes,
          "the master's cluster sum holds this server's kv regions");
      assertTrue(m.value("ferrite_face_ops_total", face("kv", "create_table")) >= 1);
      assertTrue(m.value("ferrite_face_ops_total", face("nodes", "create")) >= n);
      assertTrue(m.value("ferrite_face_ops_total", face("nodes", "lookup")) >= n);
      assertTrue(m.value("ferrite_face_ops_total", face("memory", "create_ns")) >= 1);
      assertTrue(m.value("ferrite_face_ops_total", face("memory", "alloc")) >= 1);
      assertTrue(m.sum("ferrite_rpc_requests_total", Map.of("service", "nodes")) >= 2.0 * n);
      assertTrue(m.sum("ferrite_rpc_requests_total", Map.of("service", "memory")) >= 3);

      PrometheusText cl = PrometheusText.parse(clientMetrics.scrape());
      assertEquals((double) n, cl.value("ferrite_face_ops_total", face("kv", "put")));
      assertTrue(cl.value("ferrite_face_ops_total", face("kv", "get")) >= n);
      assertEquals((double) n, cl.value("ferrite_face_ops_total", face("nodes", "put")));
      assertEquals((double) n, cl.value("ferrite_face_ops_total", face("memory", "write")));
      assertEquals((double) n, cl.value("ferrite_face_ops_total", face("memory", "read")));
      assertEquals(1.0, cl.value("ferrite_face_ops_total", face("memory", "alloc")));
      clientMetrics.close();
    }
  }
}
