package io.ferrite.bench.resilience;

import io.ferrite.apps.worker.JvmLauncher;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.Secrets;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A cluster of child JVMs on 127.0.0.1 for the resilience bench: a master (or a Raft group of
 * masters) and memory servers, each a {@code ferrite master}/{@code ferrite server} process of this
 * build, that the bench SIGKILLs and starts again. Their output goes to {@code
 * <dir>/processes.log}; closing kills every process still running and removes the shm directory.
 */
final class ProcessCluster implements AutoCloseable {
  /** The CLI's main class (ferrite-cli is on the class path whenever the bench runs from it). */
  static final String CLI = "io.ferrite.cli.FerriteCli";

  private static final WorkerLauncher.Jvm JVM =
      new WorkerLauncher.Jvm(256L << 20, 512L << 20, 1, true);

  private final Path dir;
  private final Path shmDir;
  private final String clusterId;
  private final Credentials credentials;
  private final int[] ports;
  private final int[] raftPorts;
  private final List<String> masterSets;
  private final PrintStream log;
  private final JvmLauncher launcher;
  private final Map<String, Process> running = new LinkedHashMap<>();
  private final List<FerriteClient> clients = new ArrayList<>();
  private final Map<Integer, FerriteClient> probes = new java.util.HashMap<>();

  /**
   * Readies (does not start) a cluster of {@code masters} masters in {@code dir}, with the master
   * config keys {@code masterSets} ({@code key=value}).
   */
  ProcessCluster(Path dir, String clusterId, int masters, List<String> masterSets)
      throws IOException {
    this.dir = dir;
    this.shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-bench-resilience-");
    this.clusterId = clusterId;
    this.credentials = new Credentials(clusterId, Secrets.readOrCreate(dir.resolve("secret")));
    this.ports = freePorts(masters);
    this.raftPorts = masters > 1 ? freePorts(masters) : new int[0];
    this.masterSets = List.copyOf(masterSets);
    this.log = new PrintStream(Files.newOutputStream(dir.resolve("processes.log")), true, "UTF-8");
    this.launcher = new JvmLauncher(CLI, log);
  }

  int masters() {
    return ports.length;
  }

  /** {@code ferrite://127.0.0.1:p1,127.0.0.1:p2...}: every master. */
  String uri() {
    StringJoiner j = new StringJoiner(",", "ferrite://", "");
    for (int p : ports) {
      j.add("127.0.0.1:" + p);
    }
    return j.toString();
  }

  /** The client address of master {@code id} (from 1). */
  String masterAddress(int id) {
    return "tcp://127.0.0.1:" + ports[id - 1];
  }

  Path log() {
    return dir.resolve("processes.log");
  }

  /** Starts master {@code id} (from 1), process {@code m<id>}. */
  void startMaster(int id) throws IOException {
    List<String> args =
        new ArrayList<>(List.of("master", "--dir", dir.resolve("m" + id).toString()));
    args.addAll(List.of("--port", Integer.toString(ports[id - 1]), "--cluster-id", clusterId));
    args.addAll(List.of("--secret-file", dir.resolve("secret").toString()));
    if (ports.length > 1) {
      StringJoiner peers = new StringJoiner(",");
      for (int i = 0; i < ports.length; i++) {
        peers.add("127.0.0.1:" + ports[i] + ":" + raftPorts[i]);
      }
      args.addAll(List.of("--peers", peers.toString(), "--id", Integer.toString(id)));
    }
    for (String set : masterSets) {
      args.addAll(List.of("--set", set));
    }
    args.addAll(common());
    start("m" + id, args);
  }

  /** Starts memory server {@code name} over tcp with {@code dram} of capacity. */
  void startServer(String name, String dram) throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "server",
                "--dir",
                dir.resolve("servers").toString(),
                "--name",
                name,
                "--master",
                uri(),
                "--cluster-id",
                clusterId,
                "--secret-file",
                dir.resolve("secret").toString(),
                "--fabrics",
                "tcp",
                "--dram",
                dram,
                "--disk",
                "0",
                "--set",
                "region.size=16m"));
    args.addAll(common());
    start(name, args);
  }

  private List<String> common() {
    return List.of(
        "--set",
        "heartbeat.interval=100ms",
        "--set",
        "shm.dir=" + shmDir,
        "--set",
        "metrics.port=-1");
  }

  private void start(String name, List<String> args) throws IOException {
    Process old = running.get(name);
    if (old != null && old.isAlive()) {
      throw new IllegalStateException(name + " is running");
    }
    running.put(name, launcher.start(name, args, JVM));
  }

  /** SIGKILLs process {@code name} and reaps it; returns when it is gone. */
  void kill(String name) throws InterruptedException {
    Process p = running.get(name);
    p.destroyForcibly(); // SIGKILL on Linux
    p.waitFor();
  }

  /** Whether process {@code name} runs (started and not exited). */
  boolean alive(String name) {
    Process p = running.get(name);
    return p != null && p.isAlive();
  }

  /**
   * A client over tcp, session on, waiting out the master for up to {@code deadline}; the first
   * connect (which does not wait: the masters may still be starting) is tried until the deadline.
   */
  FerriteClient client(String name, Duration deadline) throws InterruptedException {
    long until = System.nanoTime() + deadline.toNanos();
    while (true) {
      try {
        FerriteClient c =
            Ferrite.connect(
                uri(),
                ClientOptions.builder(credentials)
                    .fabric("tcp")
                    .clientName(name)
                    .masterDeadline(deadline)
                    .build());
        clients.add(c);
        return c;
      } catch (io.ferrite.fabric.FerriteException e) {
        if (!e.retryable() || System.nanoTime() > until) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }

  /** A client of master {@code id} only, no session (to ask it its role); one per master. */
  FerriteClient probe(int id) {
    return probes.computeIfAbsent(id, this::newProbe);
  }

  private FerriteClient newProbe(int id) {
    FerriteClient c =
        Ferrite.connect(
            masterAddress(id),
            ClientOptions.builder(credentials)
                .fabric("tcp")
                .session(false)
                .clientName("bench-probe")
                .masterDeadline(Duration.ZERO)
                .build());
    clients.add(c);
    return c;
  }

  @Override
  public void close() throws IOException {
    for (FerriteClient c : clients) {
      try {
        c.close();
      } catch (RuntimeException e) {
        // Keep stopping the rest: the processes below matter more.
      }
    }
    for (Process p : running.values()) {
      p.destroyForcibly();
    }
    boolean interrupted = false;
    for (Process p : running.values()) {
      while (true) {
        try {
          p.waitFor();
          break;
        } catch (InterruptedException e) {
          interrupted = true; // reap them all first: none may outlive the bench
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    log.close();
    FileTrees.delete(shmDir);
  }

  /** The last {@code lines} lines of the processes' log, to say why a step failed. */
  String tail(int lines) {
    try {
      List<String> all = Files.readAllLines(log(), StandardCharsets.UTF_8);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  private static int[] freePorts(int n) throws IOException {
    int[] out = new int[n];
    List<ServerSocket> held = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0);
        held.add(s);
        out[i] = s.getLocalPort();
      }
    } finally {
      for (ServerSocket s : held) {
        s.close();
      }
    }
    return out;
  }
}
