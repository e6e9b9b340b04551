package io.ferrite.kernel.master;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;

/**
 * A master group in one JVM (a small harness of our own: Ratis's MiniRaftCluster is internal): N
 * masters on loopback tcp, each with its own data directory, client port and Raft port, the
 * extensions {@code extensions} makes (fresh instances per state). Closes what it started.
 */
final class MasterGroupHarness implements AutoCloseable {
  final Path dir;
  final int n;
  final int[] ports;
  final int[] raftPorts;
  final Fabric tcp = FabricFactory.standard().open("tcp");
  final Master[] masters;
  final FerriteConfig base;
  final Supplier<List<MasterExtension>> extensions;
  final List<AutoCloseable> others = new ArrayList<>();

  MasterGroupHarness(
      Path dir, int n, Map<String, String> extra, Supplier<List<MasterExtension>> extensions) {
    this.dir = dir;
    this.n = n;
    this.extensions = extensions;
    this.ports = freePorts(2 * n);
    this.raftPorts = new int[n];
    System.arraycopy(ports, n, raftPorts, 0, n);
    this.masters = new Master[n + 1];
    StringBuilder peers = new StringBuilder();
    for (int i = 0; i < n; i++) {
      peers.append(i == 0 ? "" : ",").append("127.0.0.1:" + ports[i] + ":" + raftPorts[i]);
    }
    FerriteConfig.Builder b =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "g")
            .set(FerriteConfig.MASTER_PEERS, peers.toString())
            .set(FerriteConfig.REGION_SIZE, "4m")
            .set(FerriteConfig.BLOCK_SIZE, "1m")
            .set(FerriteConfig.CAPACITY_DRAM, "16m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.SHM_DIR, dir.resolve("shm").toString())
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "100ms")
            .set(FerriteConfig.DEAD_TIMEOUT, "3s")
            .set(FerriteConfig.MASTER_RAFT_TIMEOUT, "500ms")
            .set(FerriteConfig.JOURNAL_FSYNC, "false");
    extra.forEach(b::set);
    this.base = b.build();
  }

  /**
   * {@code count} ports free now, below the kernel's ephemeral range: a master restarted on its
   * port (the group's peers are fixed addresses) must find it free again, and a port from the
   * ephemeral range (what binding port 0 gives) may meanwhile be taken by any outgoing connection
   * on the machine (seen: "Address already in use" restarting a member under load).
   */
  static int[] freePorts(int count) {
    int below = ephemeralStart();
    List<ServerSocket> held = new ArrayList<>();
    int[] out = new int[count];
    try {
      // Not a test decision, so not seeded: where to listen, spread to avoid other test JVMs.
      Random r = new Random();
      for (int i = 0, tries = 0; i < count; tries++) {
        if (tries > 1000) {
          throw new IllegalStateException("no free port below " + below);
        }
        int port = 10_000 + r.nextInt(below - 10_000);
        try {
          ServerSocket s = new ServerSocket();
          held.add(s);
          s.bind(new InetSocketAddress("127.0.0.1", port));
          out[i++] = port;
        } catch (IOException taken) {
          // try another
        }
      }
      for (ServerSocket s : held) {
        s.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** The first port of the kernel's ephemeral range (Linux's default where it cannot be read). */
  private static int ephemeralStart() {
    try {
      String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim();
      int start = Integer.parseInt(range.split("\\s+")[0]);
      return start > 11_000 ? start : 32_768;
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }

  /** Master {@code i}'s configuration (from 1). */
  FerriteConfig config(int i) {
    return base.with(FerriteConfig.MASTER_ID, String.valueOf(i))
        .with(FerriteConfig.MASTER_PORT, String.valueOf(ports[i - 1]))
        .with(FerriteConfig.DATA_DIR, dir.resolve("m" + i).toString());
  }

  Master start(int i) {
    masters[i] = Master.startGroup(config(i), LocalCluster.CREDENTIALS, List.of(tcp), extensions);
    return masters[i];
  }

  MasterGroupHarness startAll() {
    for (int i = 1; i <= n; i++) {
      start(i);
    }
    return this;
  }

  void stop(int i) {
    Master m = masters[i];
    masters[i] = null;
    if (m != null) {
      m.close();
    }
  }

  /** The tcp address of master {@code i}. */
  String address(int i) {
    return "tcp://127.0.0.1:" + ports[i - 1];
  }

  /** Every master's address, comma-separated (what a group's cluster URI maps to). */
  String addresses() {
    List<String> a = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      a.add(address(i));
    }
    return String.join(",", a);
  }

  /**
   * The master serving as leader, once exactly one running master does (polls; gives up after 60 s,
   * which only a broken group takes: the test then fails).
   */
  int awaitLeader() {
    long until = System.nanoTime() + 60_000_000_000L;
    while (System.nanoTime() < until) {
      int leader = -1;
      int count = 0;
      for (int i = 1; i <= n; i++) {
        if (masters[i] != null && masters[i].role().equals("leader")) {
          leader = i;
          count++;
        }
      }
      if (count == 1) {
        return leader;
      }
      sleep(20);
    }
    throw new AssertionError("no single leader in the master group within 60 s");
  }

  /**
   * Waits until {@code expected} is the one leader. Right after a leadership transfer the old
   * leader can still report "leader" while the new one does not yet (each updates its role on its
   * own), so a single {@link #awaitLeader} may name the old one for a moment.
   */
  int awaitLeader(int expected) {
    long until = System.nanoTime() + 30_000_000_000L;
    int leader = awaitLeader();
    while (leader != expected && System.nanoTime() < until) {
      sleep(20);
      leader = awaitLeader();
    }
    return leader;
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** A client of the group (every address), closed with the harness. */
  FerriteClient client() {
    return client(java.time.Duration.ofSeconds(15));
  }

  /**
   * As {@link #client()}, waiting out a group with no leader for at most {@code masterDeadline}
   * (the client's default is 15 s).
   */
  FerriteClient client(java.time.Duration masterDeadline) {
    FerriteClient c =
        Ferrite.connect(
            addresses(),
            ClientOptions.builder(LocalCluster.CREDENTIALS.as(Role.CLIENT))
                .fabric("tcp")
                .rpcTimeout(java.time.Duration.ofSeconds(10))
                .masterDeadline(masterDeadline)
                .build());
    others.add(0, c);
    return c;
  }

  @Override
  public void close() {
    for (AutoCloseable c : others) {
      try {
        c.close();
      } catch (Exception e) {
        // closing the rest matters more
      }
    }
    for (int i = 1; i <= n; i++) {
      stop(i);
    }
    tcp.close();
  }
}
