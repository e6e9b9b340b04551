package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

/** Runs {@code ferrite} commands as separate JVMs for the multi-process tests, and stops them. */
final class CliProcesses {
  private CliProcesses() {}

  /**
   * Starts {@code ferrite args...} in a new JVM with this test's class path; its output is appended
   * to {@code <logDir>/<name>.log}.
   */
  static Process start(Path logDir, String name, String... args) throws IOException {
    return start(logDir, name, List.of(), args);
  }

  /**
   * As {@link #start(Path, String, String...)}, the java command run through {@code wrapper} (e.g.
   * {@code ip netns exec <ns>}, which execs it: the process is still the JVM).
   */
  static Process start(Path logDir, String name, List<String> wrapper, String... args)
      throws IOException {
    List<String> cmd = new ArrayList<>(wrapper);
    cmd.addAll(command(args));
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(logDir.resolve(name + ".log").toFile()))
        .start();
  }

  /** The command line of {@code ferrite args...} in a new JVM with this test's class path. */
  static List<String> command(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(FerriteCli.class.getName());
    cmd.addAll(List.of(args));
    return cmd;
  }

  /** Closes the clients, SIGKILLs and reaps the processes, deletes {@code shmDir} (if not null). */
  static void stopAll(List<AutoCloseable> clients, List<Process> processes, Path shmDir)
      throws IOException, InterruptedException {
    for (AutoCloseable c : clients) {
      try {
        c.close();
      } catch (Exception e) {
        // Keep stopping the rest.
      }
    }
    for (Process p : processes) {
      p.destroyForcibly();
    }
    for (Process p : processes) {
      p.waitFor();
    }
    if (shmDir != null && Files.exists(shmDir)) {
      FileTrees.delete(shmDir);
    }
  }

  /** The {@code *.log} files in {@code logDir}, for a failure message. */
  static String logs(Path logDir) {
    StringBuilder sb = new StringBuilder("logs:\n");
    try (Stream<Path> s = Files.list(logDir)) {
      for (Path p : s.filter(f -> f.toString().endsWith(".log")).sorted().toList()) {
        sb.append("--- ").append(p.getFileName()).append('\n');
        sb.append(Files.readString(p, StandardCharsets.UTF_8));
      }
    } catch (IOException e) {
      sb.append(e);
    }
    return sb.toString();
  }

  /**
   * Polls {@code probe} every 100 ms until it gives something neither null nor false (a failing
   * probe counts as not yet), for at most {@code timeoutNanos}; then fails naming {@code what}, the
   * last error and {@code context} (the processes' logs).
   */
  static <T> T await(String what, long timeoutNanos, Supplier<T> probe, Supplier<String> context)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeoutNanos;
    RuntimeException last = null;
    while (System.nanoTime() < deadline) {
      try {
        T v = probe.get();
        if (v != null && !Boolean.FALSE.equals(v)) {
          return v;
        }
      } catch (RuntimeException e) {
        last = e;
      }
      Thread.sleep(100);
    }
    throw new AssertionError(
        "timed out waiting for " + what + " (last error: " + last + ")\n" + context.get());
  }

  /** Whether the cluster at {@code port} has exactly one member, ALIVE with its regions. */
  static boolean oneServerAlive(int port, Credentials credentials) {
    try (FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials).fabric("tcp").session(false).build())) {
      ClusterStatus st = c.status();
      return st.members().size() == 1
          && st.members().get(0).info().state() == ServerState.ALIVE
          && st.members().get(0).regions() > 0;
    }
  }
}
