package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.Secrets;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the multi-process tests share: a cluster of {@code ferrite} JVMs started through {@link
 * CliProcesses}, logging into the test's directory, every process and client stopped after each
 * test (also when it fails) and its shm directory removed.
 */
abstract class ProcessClusterTest {
  static final long TIMEOUT_NANOS = 60_000_000_000L;

  @TempDir Path dir;
  Path shmDir;
  int port;
  String clusterId;
  Credentials credentials;
  final List<Process> processes = new ArrayList<>();
  final List<AutoCloseable> clients = new ArrayList<>();

  /** A client of this cluster's master over tcp, named {@code name}, closed after the test. */
  FerriteClient tcpClient(String name) {
    FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials).fabric("tcp").clientName(name).build());
    clients.add(c);
    return c;
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Readies a new cluster {@code clusterId}: an shm directory under /dev/shm (removed after the
   * test), a free port for the master, and the cluster secret in the test's directory.
   */
  void newCluster(String clusterId, String shmPrefix) throws IOException {
    shmDir = Files.createTempDirectory(Path.of("/dev/shm"), shmPrefix);
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    this.clusterId = clusterId;
    credentials = new Credentials(clusterId, Secrets.readOrCreate(secret()));
  }

  /**
   * Starts a master of the cluster as process {@code name} on {@link #port}, with heartbeats every
   * 100 ms, its shm socket where {@link #stopAll} cleans, and the config keys {@code sets} ({@code
   * key=value}).
   */
  Process startMaster(String name, String... sets) throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "master",
                "--dir",
                dir.toString(),
                "--port",
                Integer.toString(port),
                "--cluster-id",
                clusterId));
    return start(name, withSets(args, sets));
  }

  /**
   * Starts memory server {@code name} of the cluster over tcp with {@code dram} and {@code disk} of
   * capacity, 16 MiB regions, heartbeats every 100 ms and its shm files where {@link #stopAll}
   * cleans.
   */
  Process startServer(String name, String dram, String disk) throws IOException {
    return startServer(name, dram, disk, new String[0]);
  }

  /** As above, with the config keys {@code sets} ({@code key=value}) too. */
  Process startServer(String name, String dram, String disk, String... sets) throws IOException {
    return startServerOver("tcp", name, dram, disk, sets);
  }

  /** As above, serving {@code fabrics} (e.g. {@code tcp,shm}). */
  Process startServerOver(String fabrics, String name, String dram, String disk, String... sets)
      throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "server",
                "--dir",
                dir.toString(),
                "--name",
                name,
                "--master",
                "ferrite://127.0.0.1:" + port,
                "--cluster-id",
                clusterId,
                "--fabrics",
                fabrics,
                "--dram",
                dram,
                "--disk",
                disk));
    String[] all = java.util.Arrays.copyOf(sets, sets.length + 1);
    all[sets.length] = "region.size=16m";
    return start(name, withSets(args, all));
  }

  String[] withSets(List<String> args, String... sets) {
    for (String set : sets) {
      args.add("--set");
      args.add(set);
    }
    args.addAll(List.of("--set", "heartbeat.interval=100ms", "--set", "shm.dir=" + shmDir));
    return args.toArray(new String[0]);
  }

  /** Where the cluster secret is kept. */
  Path secret() {
    return dir.resolve("secret");
  }

  @AfterEach
  void stopAll() throws IOException, InterruptedException {
    CliProcesses.stopAll(clients, processes, shmDir);
  }

  /** Starts {@code ferrite args...} as process {@code name}, stopped after the test. */
  Process start(String name, String... args) throws IOException {
    Process p = CliProcesses.start(dir, name, args);
    processes.add(p);
    return p;
  }

  /** The processes' logs, for a failure message. */
  String logs() {
    return CliProcesses.logs(dir);
  }

  /** What one in-JVM {@code ferrite} command printed. */
  record Ran(int code, String out, String err) {}

  /** {@code ferrite fs <args>} against this cluster, in this JVM. */
  Ran fs(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "fs";
    System.arraycopy(args, 0, all, 1, args.length);
    return cli(all);
  }

  /** The cluster's URI for the in-JVM commands: its one master (a test of groups names more). */
  String clusterUri() {
    return "ferrite://127.0.0.1:" + port;
  }

  /** {@code ferrite <args> --cluster ... --secret-file ... --cluster-id ...}, in this JVM. */
  Ran cli(String... args) {
    java.io.StringWriter out = new java.io.StringWriter();
    java.io.StringWriter err = new java.io.StringWriter();
    picocli.CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new java.io.PrintWriter(out, true));
    cl.setErr(new java.io.PrintWriter(err, true));
    String[] all = new String[args.length + 6];
    System.arraycopy(args, 0, all, 0, args.length);
    System.arraycopy(
        new String[] {
          "--cluster", clusterUri(), "--secret-file", secret().toString(), "--cluster-id", clusterId
        },
        0,
        all,
        args.length,
        6);
    int code = cl.execute(all);
    return new Ran(code, out.toString(), err.toString());
  }

  /** Polls {@code probe} until it answers (see {@link CliProcesses#await}), for at most 60 s. */
  <T> T await(String what, Supplier<T> probe) throws InterruptedException {
    return CliProcesses.await(what, TIMEOUT_NANOS, probe, this::logs);
  }
}
