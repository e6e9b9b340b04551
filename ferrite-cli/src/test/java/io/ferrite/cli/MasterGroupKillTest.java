package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.ServerState;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A master group of 3 JVMs (Raft on Apache Ratis, journal fsync on) and a memory server: writer
 * threads allocate persistently owned blocks through the group; the leader is SIGKILLed after a
 * seeded number of acknowledgements; a new leader takes over, the server and the clients follow it,
 * and every acknowledged allocation is owned on the new leader. The killed master restarts on its
 * directory and catches up (its committed state reaches the leader's index). Every process is
 * killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class MasterGroupKillTest extends ProcessClusterTest {
  static final String CLUSTER = "master-group-kill-test";
  static final int WRITERS = 8;

  int[] ports = new int[3];
  int[] raftPorts = new int[3];
  final Process[] masters = new Process[4];

  private String uri() {
    return "ferrite://127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2];
  }

  private Process startGroupMaster(int id) throws java.io.IOException {
    String peers =
        String.format(
            Locale.ROOT,
            "127.0.0.1:%d:%d,127.0.0.1:%d:%d,127.0.0.1:%d:%d",
            ports[0],
            raftPorts[0],
            ports[1],
            raftPorts[1],
            ports[2],
            raftPorts[2]);
    masters[id] =
        start(
            "master-" + id,
            "master",
            "--dir",
            dir.resolve("m" + id).toString(),
            "--secret-file",
            secret().toString(),
            "--cluster-id",
            clusterId,
            "--peers",
            peers,
            "--id",
            String.valueOf(id),
            "--fabrics",
            "tcp",
            "--set",
            "journal.fsync=true",
            "--set",
            "block.size=64k",
            "--set",
            "server.dead.timeout=30s",
            "--set",
            "heartbeat.interval=100ms",
            "--set",
            "shm.dir=" + shmDir);
    return masters[id];
  }

  private FerriteClient client(boolean session) {
    FerriteClient c =
        Ferrite.connect(
            uri(),
            ClientOptions.builder(credentials)
                .fabric("tcp")
                .session(session)
                .clientName("master-group-kill-test")
                .build());
    clients.add(c);
    return c;
  }

  /** MASTER_INFO of master {@code id} (1 to 3), or null if it does not answer. */
  private MasterStub.MasterInfo info(Fabric tcp, int id) {
    Duration d = Duration.ofSeconds(2);
    try (FabricConnection c =
        tcp.connect("tcp://127.0.0.1:" + ports[id - 1], new ConnectOptions(credentials, d, d))) {
      return new MasterStub(c, d).masterInfo();
    } catch (FerriteException e) {
      return null;
    }
  }

  private Integer leader(Fabric tcp) {
    for (int i = 1; i <= 3; i++) {
      MasterStub.MasterInfo m = info(tcp, i);
      if (m != null && m.roleName().equals("leader")) {
        return i;
      }
    }
    return null;
  }

  @Test
  void everyAcknowledgedAllocationSurvivesTheLeadersSigkill(Random random) throws Exception {
    newCluster(CLUSTER, "ferrite-master-group-kill-");
    List<ServerSocket> held = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      held.add(new ServerSocket(0));
    }
    for (int i = 0; i < 3; i++) {
      ports[i] = held.get(i).getLocalPort();
      raftPorts[i] = held.get(3 + i).getLocalPort();
    }
    for (ServerSocket s : held) {
      s.close();
    }
    Fabric tcp = FabricFactory.standard().open("tcp");
    clients.add(tcp);
    for (int i = 1; i <= 3; i++) {
      startGroupMaster(i);
    }
    int first = await("a leader", () -> leader(tcp));
    start(
        "s1",
        "server",
        "--dir",
        dir.toString(),
        "--name",
        "s1",
        "--master",
        uri(),
        "--cluster-id",
        clusterId,
        "--fabrics",
        "tcp",
        "--dram",
        "64m",
        "--disk",
        "0",
        "--set",
        "region.size=16m",
        "--set",
        "heartbeat.interval=100ms",
        "--set",
        "shm.dir=" + shmDir);
    await("an ALIVE server", () -> serverAlive() ? Boolean.TRUE : null);

    Map<String, String> allocated = new ConcurrentHashMap<>();
    AtomicInteger acks = new AtomicInteger();
    AtomicLong killedAt = new AtomicLong();
    AtomicLong firstAckAfterKill = new AtomicLong();
    AtomicInteger acksAfterKill = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    List<Throwable> unexpected = new CopyOnWriteArrayList<>();
    List<Thread> writers = new ArrayList<>();
    for (int t = 0; t < WRITERS; t++) {
      FerriteClient c = client(true);
      int id = t;
      writers.add(
          new Thread(
              () -> {
                try {
                  for (int i = 0; !stop.get(); i++) {
                    String owner = "w" + id + "-" + i;
                    try {
                      long issued = System.nanoTime();
                      List<BlockRef> got = c.allocate(1, "", false, owner);
                      allocated.put(owner, MasterKillTest.where(got.get(0)));
                      acks.incrementAndGet();
                      long k = killedAt.get();
                      // A write issued after the kill (one in flight then may be answered by the
                      // old leader, which committed it before it died).
                      if (k != 0 && issued > k) {
                        firstAckAfterKill.compareAndSet(0, System.nanoTime());
                        acksAfterKill.incrementAndGet();
                      }
                    } catch (FerriteException e) {
                      // The leader died or stepped down under this call: its outcome is unknown
                      // (the owner is never reused, so it is not checked). The client follows the
                      // leader on its next call.
                      Thread.sleep(20);
                    }
                  }
                } catch (RuntimeException | InterruptedException e) {
                  unexpected.add(e);
                }
              },
              "master-group-kill-writer-" + t));
    }
    writers.forEach(Thread::start);
    int killAt = 100 + random.nextInt(300);
    await(killAt + " acknowledged allocations", () -> acks.get() >= killAt ? Boolean.TRUE : null);
    killedAt.set(System.nanoTime());
    masters[first].destroyForcibly().waitFor(); // SIGKILL the leader, mid-stream
    Integer elected = await("a new leader", () -> leader(tcp));
    long electedAt = System.nanoTime();
    await("the server ALIVE on the new leader", () -> serverAlive() ? Boolean.TRUE : null);
    long aliveAt = System.nanoTime();
    await("100 acknowledgements after the kill", () -> acksAfterKill.get() >= 100 ? 1 : null);
    stop.set(true);
    for (Thread w : writers) {
      w.join(TIMEOUT_NANOS / 1_000_000);
      assertTrue(!w.isAlive(), w.getName() + " still running\n" + logs());
    }
    assertEquals(List.of(), unexpected);
    System.out.printf(
        Locale.ROOT,
        "master group: %d acknowledged before the kill; after the leader's SIGKILL: master %d"
            + " serving as leader at %.0f ms, the server ALIVE there at %.0f ms, first write issued"
            + " after the kill acknowledged at %.0f ms%n",
        killAt,
        elected,
        (electedAt - killedAt.get()) / 1e6,
        (aliveAt - killedAt.get()) / 1e6,
        (firstAckAfterKill.get() - killedAt.get()) / 1e6);

    int next = await("a new leader", () -> leader(tcp));
    assertTrue(next != first);
    FerriteClient check = client(true);
    for (Map.Entry<String, String> e : allocated.entrySet()) {
      List<BlockRef> owned = check.owned(e.getKey());
      assertEquals(1, owned.size(), "acknowledged allocation " + e.getKey() + " lost\n" + logs());
      assertEquals(e.getValue(), MasterKillTest.where(owned.get(0)), e.getKey());
    }

    // The killed master restarts on its directory and catches up with the leader.
    startGroupMaster(first);
    long target = info(tcp, next).appliedIndex();
    await(
        "master " + first + " caught up to index " + target,
        () -> {
          MasterStub.MasterInfo m = info(tcp, first);
          return m != null && m.appliedIndex() >= target ? m : null;
        });
  }

  private boolean serverAlive() {
    try (FerriteClient c =
        Ferrite.connect(
            uri(), ClientOptions.builder(credentials).fabric("tcp").session(false).build())) {
      ClusterStatus st = c.status();
      return st.members().size() == 1
          && st.members().get(0).info().state() == ServerState.ALIVE
          && st.members().get(0).regions() > 0;
    } catch (FerriteException e) {
      return false;
    }
  }
}
