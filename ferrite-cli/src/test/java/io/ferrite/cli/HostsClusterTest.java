package io.ferrite.cli;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.testing.PrometheusText;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;

/**
 * A cluster across hosts ({@link NetHosts}): the master, memory servers and clients each in a
 * network namespace of their own, talking over tcp through the bridge; the test JVM is a client
 * from the root namespace (a host apart). Everything {@link ProcessClusterTest} stops after each
 * test is stopped first, then the hosts are removed.
 */
abstract class HostsClusterTest extends ProcessClusterTest {
  /** Every process's /metrics port, in its own namespace (ports are per namespace). */
  static final int METRICS_PORT = 9100;

  NetHosts hosts;
  private Fabric tcp;

  /** A new cluster on {@code count} new hosts. */
  void newHostsCluster(int count, String clusterId, String shmPrefix)
      throws IOException, InterruptedException {
    hosts = NetHosts.create(count);
    newCluster(clusterId, shmPrefix);
  }

  @Override
  @AfterEach // an override without it would not run (JUnit does not inherit it)
  void stopAll() throws IOException, InterruptedException {
    try {
      super.stopAll();
    } finally {
      if (hosts != null) {
        hosts.close();
      }
    }
  }

  /** {@code ferrite://<host>:<port>}: the master runs on host {@code masterHost}. */
  String masterUri(int masterHost) {
    return "ferrite://" + hosts.address(masterHost) + ":" + port;
  }

  /**
   * {@code ferrite://<host 1>:<port>,...}: a group of {@code masters} masters on hosts 1..masters
   * (see {@code Ferrite.masterAddresses}); with one master, {@link #masterUri}.
   */
  String groupUri(int masters) {
    StringBuilder b = new StringBuilder("ferrite://");
    for (int m = 1; m <= masters; m++) {
      b.append(m > 1 ? "," : "").append(hosts.address(m)).append(':').append(port);
    }
    return b.toString();
  }

  /**
   * Starts a master on host {@code h}, bound to its address, serving tcp and shm (shm must then go
   * unused: no client shares its host), /metrics on its address.
   */
  Process startMasterOn(int h, String name, String... sets) throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "master",
                "--dir",
                dir.toString(),
                "--host",
                hosts.address(h),
                "--port",
                Integer.toString(port),
                "--cluster-id",
                clusterId,
                "--metrics-port",
                Integer.toString(METRICS_PORT),
                "--metrics-host",
                hosts.address(h)));
    return startIn(h, name, withSets(args, sets));
  }

  /**
   * The port each master of a group talks Raft on. Ports are per network namespace and every master
   * has a host (a namespace) of its own, so one fixed port serves all of them.
   */
  static final int RAFT_PORT = 7200;

  /**
   * Starts master {@code h} of a Raft group of {@code masters} on hosts 1..masters ({@code --peers}
   * with every host's address, {@code --id h}), bound to host h's address, its journal and Raft log
   * in a directory of its own ({@code m<h>}: the hosts share the test's file system), the cluster's
   * secret file, /metrics on its address.
   */
  Process startGroupMasterOn(int h, int masters, String name, String... sets) throws IOException {
    StringBuilder peers = new StringBuilder();
    for (int m = 1; m <= masters; m++) {
      peers.append(m > 1 ? "," : "").append(hosts.address(m)).append(':').append(port);
      peers.append(':').append(RAFT_PORT);
    }
    List<String> args =
        new ArrayList<>(
            List.of(
                "master",
                "--dir",
                dir.resolve("m" + h).toString(),
                "--secret-file",
                secret().toString(),
                "--peers",
                peers.toString(),
                "--id",
                Integer.toString(h),
                "--host",
                hosts.address(h),
                "--cluster-id",
                clusterId,
                "--metrics-port",
                Integer.toString(METRICS_PORT),
                "--metrics-host",
                hosts.address(h)));
    return startIn(h, name, withSets(args, sets));
  }

  /** MASTER_INFO of the master on host {@code h}, or null if it does not answer within 1 s. */
  MasterStub.MasterInfo masterInfo(int h) {
    if (tcp == null) {
      tcp = FabricFactory.standard().open("tcp");
      clients.add(tcp);
    }
    Duration d = Duration.ofSeconds(1);
    try (FabricConnection c =
        tcp.connect(
            "tcp://" + hosts.address(h) + ":" + port, new ConnectOptions(credentials, d, d))) {
      return new MasterStub(c, d).masterInfo();
    } catch (FerriteException e) {
      return null;
    }
  }

  /** The host (1..masters) whose master says it is its group's leader, or null if none does. */
  Integer leaderHost(int masters) {
    for (int h = 1; h <= masters; h++) {
      MasterStub.MasterInfo m = masterInfo(h);
      if (m != null && m.roleName().equals("leader")) {
        return h;
      }
    }
    return null;
  }

  /**
   * Starts memory server {@code name} on host {@code h}, of the master on host {@code masterHost}:
   * bound to 0.0.0.0 (it must announce its host's address, not the wildcard), serving tcp and shm,
   * 16 MiB regions, /metrics on its address.
   */
  Process startServerOn(
      int h, int masterHost, String name, String dram, String disk, String... sets)
      throws IOException {
    return startServerOn(h, masterUri(masterHost), name, dram, disk, sets);
  }

  /**
   * As {@link #startServerOn(int, int, String, String, String, String...)}, of the masters at uri.
   */
  Process startServerOn(int h, String master, String name, String dram, String disk, String... sets)
      throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "server",
                "--dir",
                dir.toString(),
                "--name",
                name,
                "--host",
                "0.0.0.0",
                "--master",
                master,
                "--cluster-id",
                clusterId,
                "--fabrics",
                "tcp,shm",
                "--dram",
                dram,
                "--disk",
                disk,
                "--metrics-port",
                Integer.toString(METRICS_PORT),
                "--metrics-host",
                hosts.address(h)));
    List<String> all = new ArrayList<>(List.of(sets));
    all.add("region.size=16m");
    return startIn(h, name, withSets(args, all.toArray(new String[0])));
  }

  /**
   * Starts {@code ferrite args...} on host {@code h} as process {@code name}, with an shm directory
   * of host h's own ({@code <shmDir>/h<h>}): the namespaces share this machine's /dev/shm, and two
   * masters of a group on different hosts would otherwise bind the same shm socket path, so a
   * client on an isolated host reached another host's master through it (seen in .ci/run:
   * MasterPartitionTest's minority write was acknowledged by the majority's leader over shm).
   */
  Process startIn(int h, String name, String... args) throws IOException {
    String shared = "shm.dir=" + shmDir;
    Path own = shmDir.resolve("h" + h);
    Files.createDirectories(own);
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals(shared)) {
        args[i] = "shm.dir=" + own;
      }
    }
    Process p = CliProcesses.start(dir, name, hosts.exec(h), args);
    processes.add(p);
    return p;
  }

  /**
   * Runs {@code ferrite} commands (separated by {@link CliScript#SEPARATOR}) in one JVM on host
   * {@code h}, each with the cluster's address, secret and id added; returns what it printed.
   */
  String cliOn(int h, int masterHost, String... commands) throws Exception {
    List<String> args = new ArrayList<>();
    List<String> target =
        List.of(
            "--cluster",
            masterUri(masterHost),
            "--secret-file",
            secret().toString(),
            "--cluster-id",
            clusterId);
    for (String c : commands) {
      if (c.equals(CliScript.SEPARATOR)) {
        args.addAll(target);
      }
      args.add(c);
    }
    args.addAll(target);
    List<String> cmd = new ArrayList<>(hosts.exec(h));
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"));
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(CliScript.class.getName());
    cmd.addAll(args);
    Path log = dir.resolve("cli-h" + h + "-" + System.nanoTime() + ".out");
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    if (!p.waitFor(TIMEOUT_NANOS, TimeUnit.NANOSECONDS)) {
      throw new AssertionError("ferrite on host " + h + " hung:\n" + Files.readString(log));
    }
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  /** A client from the test JVM (the root namespace: another host than every namespace). */
  FerriteClient rootClient(int masterHost, boolean session) {
    FerriteClient c =
        Ferrite.connect(
            masterUri(masterHost),
            ClientOptions.builder(credentials).clientName("hosts-test").session(session).build());
    clients.add(c);
    return c;
  }

  /** Whether exactly {@code n} servers are ALIVE with their regions. */
  boolean serversAlive(int masterHost, int n) {
    return serversAlive(masterUri(masterHost), n);
  }

  /**
   * Whether exactly {@code n} servers are ALIVE with their regions, asking the master(s) at uri.
   */
  boolean serversAlive(String uri, int n) {
    try (FerriteClient c =
        Ferrite.connect(
            uri, ClientOptions.builder(credentials).fabric("tcp").session(false).build())) {
      ClusterStatus st = c.status();
      int alive = 0;
      for (ClusterStatus.Member m : st.members()) {
        if (m.info().state() == ServerState.ALIVE && m.regions() > 0) {
          alive++;
        }
      }
      return alive == n;
    }
  }

  /** The members as the master lists them. */
  List<MemberInfo> members(int masterHost) {
    try (FerriteClient c =
        Ferrite.connect(
            masterUri(masterHost),
            ClientOptions.builder(credentials).fabric("tcp").session(false).build())) {
      return c.members();
    }
  }

  /** Scrapes host {@code h}'s /metrics (off loopback: with the client secret as a bearer token). */
  PrometheusText scrape(int h) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    String token = HexFormat.of().formatHex(credentials.secretFor(Role.CLIENT));
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://" + hosts.address(h) + ":" + METRICS_PORT + "/metrics"))
                .header("Authorization", "Bearer " + token)
                .timeout(Duration.ofSeconds(10))
                .build(),
            HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (r.statusCode() != 200) {
      throw new IOException("scrape of host " + h + ": HTTP " + r.statusCode() + " " + r.body());
    }
    return PrometheusText.parse(r.body());
  }
}
