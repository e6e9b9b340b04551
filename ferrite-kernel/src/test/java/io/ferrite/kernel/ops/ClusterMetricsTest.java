package io.ferrite.kernel.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.kernel.testing.PrometheusText;
import io.micrometer.core.instrument.Tag;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A master and two memory servers on tcp and shm with metrics on (any port), a client that counts
 * too: after block writes and reads over tcp, each process's {@code /metrics}, scraped over HTTP
 * and parsed, shows what it served.
 */
@ExtendWith(SeedExtension.class)
class ClusterMetricsTest {
  @TempDir Path dir;

  @Test
  void eachProcessExposesWhatItServed(Random random) throws Exception {
    int ops = 20 + random.nextInt(20);
    try (ClusterHarness c =
        new ClusterHarness(
            dir,
            LocalCluster.CREDENTIALS,
            true,
            Map.of(FerriteConfig.METRICS_PORT, "0", FerriteConfig.JOURNAL_FSYNC, "true"))) {
      c.startMaster();
      MemoryServer s1 = c.startServer("s1");
      MemoryServer s2 = c.startServer("s2");
      c.awaitServers(2);
      Metrics clientMetrics = new Metrics(List.of(Tag.of("process", "client")));
      FerriteClient client =
          c.client(
              ClientOptions.builder(c.credentials.as(Role.CLIENT))
                  .fabric("tcp")
                  .metrics(clientMetrics.registry()));
      List<BlockRef> blocks = client.allocate(2);
      byte[] data = new byte[4096];
      random.nextBytes(data);
      for (int i = 0; i < ops; i++) {
        BlockRef b = blocks.get(i % 2);
        if (i == ops / 2) {
          // Connections come and go: what a closed one counted stays in the client's totals.
          client.connection(b.serverId()).close();
        }
        client.writeSync(b, 0, ByteBuffer.wrap(data));
        client.readSync(b, 0, ByteBuffer.allocate(data.length));
      }
      // An RPC the master refuses: counted with its error code as the outcome.
      assertThrows(
          FerriteException.class,
          () -> client.callMasterSync(MasterProtocol.SERVICE, 63, ByteBuffer.allocate(0)));

      // The servers: one-sided ops over tcp, counted by the endpoint that served them.
      double reads = 0;
      double writes = 0;
      double readBytes = 0;
      for (MemoryServer s : List.of(s1, s2)) {
        PrometheusText p = PrometheusText.scrape(s.ops());
        Map<String, String> tcp = Map.of("fabric", "tcp", "process", "server", "server", s.name());
        reads += p.value("ferrite_fabric_ops_total", with(tcp, "kind", "read"));
        writes += p.value("ferrite_fabric_ops_total", with(tcp, "kind", "write"));
        readBytes += p.value("ferrite_fabric_bytes_total", with(tcp, "kind", "read"));
        assertEquals("counter", p.type("ferrite_fabric_ops_total"));
        assertEquals(
            c.config.capacity("dram"),
            p.value("ferrite_capacity_bytes", Map.of("class", "dram", "use", "total")));
        // REGISTER-time RPCs go to the master; a server serves none of the client's here.
        assertFalse(p.samples().isEmpty());
      }
      assertTrue(reads >= ops, "reads " + reads + " < " + ops);
      assertTrue(writes >= ops, "writes " + writes + " < " + ops);
      assertTrue(readBytes >= (double) ops * data.length, "read bytes " + readBytes);

      // The master: its RPCs by service and opcode, the journal's fsyncs, sessions, capacity.
      PrometheusText m = PrometheusText.scrape(c.master.ops());
      Map<String, String> master = Map.of("service", "master", "process", "master");
      assertTrue(
          m.value(
                  "ferrite_rpc_requests_total",
                  with(with(master, "opcode", "" + MasterProtocol.ALLOCATE), "outcome", "ok"))
              >= 1);
      assertTrue(
          m.sum(
                  "ferrite_rpc_requests_total",
                  with(with(master, "opcode", "" + MasterProtocol.REGISTER), "outcome", "ok"))
              >= 2);
      assertEquals(
          1.0,
          m.value(
              "ferrite_rpc_requests_total",
              with(with(master, "opcode", "63"), "outcome", "unknown_opcode")));
      assertTrue(
          m.value(
                  "ferrite_rpc_latency_seconds_count",
                  with(master, "opcode", "" + MasterProtocol.ALLOCATE))
              >= 1);
      assertEquals(
          1,
          m.find(
                  "ferrite_rpc_latency_seconds",
                  with(with(master, "opcode", "" + MasterProtocol.ALLOCATE), "quantile", "0.99"))
              .size());
      assertTrue(m.value("ferrite_log_fsyncs_total", Map.of("log", "journal")) > 0);
      assertTrue(
          m.value("ferrite_log_records_total", Map.of("log", "journal"))
              >= m.value("ferrite_log_fsyncs_total", Map.of("log", "journal")));
      assertTrue(m.value("ferrite_sessions", Map.of()) >= 1);
      assertEquals(2.0, m.value("ferrite_servers", Map.of("state", "alive")));
      assertEquals(0.0, m.value("ferrite_servers", Map.of("state", "dead")));
      assertEquals(
          2.0 * c.config.capacity("dram"),
          m.value("ferrite_capacity_bytes", Map.of("class", "dram", "use", "total")));
      assertEquals(
          2.0 * c.config.blockSize(),
          m.sum("ferrite_capacity_bytes", Map.of("use", "used")),
          "two blocks allocated");
      // Every master RPC reached the master over a fabric it counts.
      assertTrue(m.sum("ferrite_fabric_ops_total", Map.of("kind", "rpc")) >= 1);

      // The client counted on its own registry (no endpoint needed: the same text).
      PrometheusText cl = PrometheusText.parse(clientMetrics.scrape());
      assertTrue(
          cl.value(
                  "ferrite_fabric_ops_total",
                  Map.of("fabric", "tcp", "kind", "read", "process", "client"))
              >= ops);
      clientMetrics.close();
    }
  }

  private static Map<String, String> with(Map<String, String> m, String k, String v) {
    java.util.HashMap<String, String> out = new java.util.HashMap<>(m);
    out.put(k, v);
    return out;
  }
}
