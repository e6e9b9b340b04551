package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.testing.ClusterHarness;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Clients ride through a master that is restarting or loses answers, and nothing they repeat is
 * applied twice (issue #20, "Clients ride through"): request ids, remembered answers (journaled),
 * the wait and its deadline. Faults come from the local fabric (a lost answer: the call ran, the
 * caller saw DROPPED), restarts from the harness; heartbeats and renewals are slowed down where a
 * fault must hit the call under test.
 */
@ExtendWith(SeedExtension.class)
class RideThroughTest {
  @TempDir Path dir;

  private static final Map<String, String> QUIET =
      Map.of(
          FerriteConfig.HEARTBEAT_INTERVAL, "20s",
          FerriteConfig.DEAD_TIMEOUT, "60s",
          FerriteConfig.SESSION_LEASE, "120s");

  private static long used(FerriteClient c) {
    return c.status().totals(null).get("dram")[1];
  }

  @Test
  void anAllocationWhoseAnswerWasLostIsAppliedOnce() throws Exception {
    try (LocalCluster cluster = new LocalCluster(dir, QUIET)) {
      cluster.startMaster();
      cluster.startServer("s1");
      FerriteClient client = cluster.client();
      long block = cluster.config.blockSize();
      long before = used(client);
      cluster.network.faults().dropNextResponses(1);
      List<BlockRef> got = client.allocate(2); // ran, answer lost; the retry gets the same answer
      assertEquals(2, got.size());
      assertEquals(before + 2 * block, used(client), "one allocation of 2 blocks, not two");
      assertTrue(cluster.master.state().rememberedAnswers() >= 1);
      // FREE, too: its retry is not told NOT_FOUND ("is not allocated") by its own first attempt.
      cluster.network.faults().dropNextResponses(2); // the REVOKE the FREE sends, then its answer
      assertEquals(2, client.free(got));
      assertEquals(before, used(client));
    }
  }

  @Test
  void aRememberedAnswerSurvivesARestartAndASnapshot(Random random) throws Exception {
    try (LocalCluster cluster = new LocalCluster(dir)) {
      cluster.startMaster();
      cluster.startServer("s1");
      cluster.awaitServers(1);
      FerriteClient client = cluster.client();
      long session = client.sessionId();
      long seq = 1 + random.nextInt(1000);
      MasterProtocol.RequestId id = new MasterProtocol.RequestId(session, seq, seq);
      List<BlockRef> first = allocateWith(cluster, id);
      long used = cluster.master.state().status().totals(null).get("dram")[1];
      cluster.startMaster(); // closes the master and starts another over the same journal
      cluster.awaitServers(1);
      assertEquals(first, allocateWith(cluster, id), "replayed from the log");
      cluster.master.snapshot(); // the answer then comes back from the snapshot, not the log
      cluster.startMaster();
      cluster.awaitServers(1);
      assertEquals(first, allocateWith(cluster, id), "replayed from the snapshot");
      assertEquals(used, cluster.master.state().status().totals(null).get("dram")[1]);
      // A new id is a new call.
      MasterProtocol.RequestId next = new MasterProtocol.RequestId(session, seq + 1, seq + 1);
      assertEquals(1, allocateWith(cluster, next).size());
    }
  }

  /** One ALLOCATE of a block with {@code id}, on a connection of its own to the current master. */
  private static List<BlockRef> allocateWith(ClusterHarness cluster, MasterProtocol.RequestId id) {
    try (io.ferrite.fabric.local.LocalFabric f =
            new io.ferrite.fabric.local.LocalFabric(cluster.network);
        FabricConnection c =
            f.connect(
                cluster.masterAddress(),
                new io.ferrite.fabric.ConnectOptions(
                    cluster.credentials.as(Role.CLIENT),
                    Duration.ofSeconds(5),
                    Duration.ofSeconds(5)))) {
      MasterStub m = new MasterStub(c, Duration.ofSeconds(5));
      return Futures.join(m.allocate(id, id.sessionId(), 1, "", false, ""));
    }
  }

  @Test
  void aMasterThatStaysDownFailsTheCallAtTheDeadline() throws Exception {
    try (LocalCluster cluster = new LocalCluster(dir, QUIET)) {
      cluster.startMaster();
      FerriteClient waits =
          cluster.client(
              ClientOptions.builder(cluster.credentials.as(Role.CLIENT))
                  .masterDeadline(Duration.ofMillis(300)));
      FerriteClient failsAtOnce =
          cluster.client(
              ClientOptions.builder(cluster.credentials.as(Role.CLIENT))
                  .masterDeadline(Duration.ZERO));
      cluster.master.close();
      FerriteException e = assertThrows(FerriteException.class, waits::status);
      assertEquals(ErrorCode.UNAVAILABLE, e.code());
      assertTrue(
          e.getMessage().contains("within")
              && e.getMessage().contains("client.master.deadline 300 ms"),
          "says how long it waited, and for what: " + e);
      // 0: fails with the connect's own error, as before the deadline existed.
      FerriteException at0 = assertThrows(FerriteException.class, failsAtOnce::status);
      assertEquals(ErrorCode.UNAVAILABLE, at0.code());
      assertTrue(!at0.getMessage().contains("client.master.deadline"), at0.getMessage());
    }
  }

  @Test
  void aNewClientOfAClusterThatIsNotRunningFailsAtOnceSayingSo() throws Exception {
    try (LocalCluster cluster = new LocalCluster(dir, QUIET)) {
      cluster.startMaster();
      cluster.master.close();
      // The default deadline (15 s) is for calls of a connected client; the first connect keeps
      // the connect's own few attempts.
      FerriteException e =
          assertThrows(
              FerriteException.class,
              () -> cluster.client(ClientOptions.builder(cluster.credentials.as(Role.CLIENT))));
      assertEquals(ErrorCode.UNAVAILABLE, e.code());
      assertTrue(e.getMessage().contains("connect to the master"), e.getMessage());
      assertTrue(!e.getMessage().contains("client.master.deadline"), e.getMessage());
    }
  }

  @Test
  void aClientRidesThroughAMasterRestartWithoutApplyingAnythingTwice(Random random)
      throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    try (ClusterHarness cluster =
        new ClusterHarness(
            dir,
            LocalCluster.CREDENTIALS,
            true,
            // The production ratio of dead timeout to heartbeat (3 s to 500 ms), not the
            // harness's 400 ms: a server reconnecting to the restarted master with backoff
            // must not be declared DEAD before it is back.
            Map.of(
                FerriteConfig.MASTER_PORT,
                String.valueOf(port),
                FerriteConfig.DEAD_TIMEOUT,
                "5s"))) {
      cluster.startMaster();
      cluster.startServer("s1");
      cluster.awaitServers(1);
      FerriteClient client = cluster.client();
      long before = used(client);
      // Allocate, free, again: every call must succeed across the restart, and at the end nothing
      // is left allocated (an allocation applied twice would leave its twin).
      List<BlockRef> got = Collections.synchronizedList(new ArrayList<>());
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread writer =
          new Thread(
              () -> {
                try {
                  while (!stop.get()) {
                    List<BlockRef> b = client.allocate(1);
                    got.addAll(b);
                    assertEquals(1, client.free(b)); // a FREE applied twice would be NOT_FOUND
                    Thread.sleep(1);
                  }
                } catch (Throwable t) {
                  failed.set(t);
                }
              },
              "ride-through-allocator");
      long session = client.sessionId();
      writer.start();
      try {
        waitFor(() -> got.size() >= 3);
        cluster.master.close(); // every call from now on waits
        // Down for longer than the session's lease (2 s): the session survives all the same (the
        // restarted master recovers it with a fresh lease), and so do its blocks.
        Thread.sleep(2200 + random.nextInt(600));
        cluster.startMaster();
        int at = got.size();
        waitFor(() -> got.size() >= at + 3 || failed.get() != null);
      } finally {
        stop.set(true);
        writer.join();
      }
      if (failed.get() != null) {
        throw new AssertionError("an allocation failed across the restart", failed.get());
      }
      assertEquals(before, used(client), "every allocation was freed: none happened twice");
      assertEquals(session, client.sessionId(), "the session survived the outage");
    }
  }

  private static void waitFor(java.util.function.BooleanSupplier done) throws InterruptedException {
    for (int i = 0; i < 3000 && !done.getAsBoolean(); i++) {
      Thread.sleep(5);
    }
    if (!done.getAsBoolean()) {
      throw new AssertionError("not done within 15 s");
    }
  }
}
