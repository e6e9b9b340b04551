package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The nodes face's mutations are covered by the kernel's request ids (issue #20, "Clients ride
 * through"): a create, a KeyValue put, a close and a remove whose answer was lost are not applied
 * twice (a second create would be ALREADY_EXISTS, a second remove NOT_FOUND); and a lookup waits
 * out a master restart, over shm (version words) and over tcp (leased lookups).
 */
@ExtendWith(SeedExtension.class)
class NodesRideThroughTest {
  @TempDir Path dir;

  @Test
  void mutationsWhoseAnswersWereLostAreAppliedOnce(Random random) throws Exception {
    // Slow heartbeats and renewals: the dropped answer is the call's, not a background one's.
    try (NodesCluster cluster =
        new NodesCluster(
            dir,
            Map.of(
                FerriteConfig.HEARTBEAT_INTERVAL, "20s",
                FerriteConfig.DEAD_TIMEOUT, "60s",
                FerriteConfig.SESSION_LEASE, "120s"))) {
      cluster.startMaster();
      cluster.startServer("s1");
      cluster.awaitServers(1);
      Nodes nodes = cluster.nodes();

      cluster.network.faults().dropNextResponses(1);
      nodes.mkdir("/d"); // a second CREATE would be ALREADY_EXISTS

      byte[] value = new byte[1 + random.nextInt(4000)];
      random.nextBytes(value);
      nodes.createTable("/d/t", true);
      cluster.network.faults().dropNextResponses(1);
      nodes.put("/d/t/kv", value);
      assertArrayEquals(value, nodes.getBytes("/d/t/kv"));

      byte[] data = new byte[1 + random.nextInt(100_000)];
      random.nextBytes(data);
      try (NodeWriter w = nodes.create("/d/f")) {
        w.writeSync(ByteBuffer.wrap(data));
        cluster.network.faults().dropNextResponses(1); // the close's PUBLISH
      }
      NodeInfo f = nodes.lookupAtMaster("/d/f");
      assertEquals(data.length, f.size());
      assertFalse(f.writing());

      cluster.network.faults().dropNextResponses(1);
      assertEquals(1, nodes.remove("/d/t/kv", false)); // a second REMOVE would be NOT_FOUND
      assertFalse(nodes.exists("/d/t/kv"));
    }
  }

  @Test
  void aLookupWaitsOutAMasterRestart(Random random) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    try (ClusterHarness cluster =
        new ClusterHarness(
            dir,
            NodesCluster.CREDENTIALS,
            true,
            Map.of(
                FerriteConfig.MASTER_PORT,
                String.valueOf(port),
                FerriteConfig.CAPACITY_DRAM,
                "2m"))) {
      cluster.startMaster(List.of(new NodesMaster(Duration.ofMillis(50))));
      cluster.startServer("s1");
      cluster.awaitServers(1);
      Nodes viaShm = new Nodes(cluster.client()); // the master over shm: versioned lookups
      Nodes viaTcp = new Nodes(cluster.client("tcp")); // over tcp: leased lookups
      byte[] value = new byte[64];
      random.nextBytes(value);
      viaShm.createTable("/t", true);
      viaShm.put("/t/k", value);
      viaTcp.lookup("/t/k"); // leased: a cache hit from now on, until the master goes

      cluster.master.close();
      CompletableFuture<NodeInfo> shm = CompletableFuture.supplyAsync(() -> viaShm.lookup("/t/k"));
      CompletableFuture<byte[]> tcp = CompletableFuture.supplyAsync(() -> viaTcp.getBytes("/t/k"));
      Thread.sleep(100 + random.nextInt(400));
      cluster.startMaster(List.of(new NodesMaster(Duration.ofMillis(50))));

      assertEquals(value.length, shm.get(30, TimeUnit.SECONDS).size());
      assertArrayEquals(value, tcp.get(30, TimeUnit.SECONDS));
      assertArrayEquals(value, viaShm.getBytes("/t/k"));
    }
  }
}
