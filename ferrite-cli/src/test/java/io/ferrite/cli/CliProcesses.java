package io.ferrite.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Runs {@code ferrite} commands as separate JVMs for the multi-process tests, and stops them. */
final class CliProcesses {
  private CliProcesses() {}

  /**
   * Starts {@code ferrite args...} in a new JVM with this test's class path; its output is appended
   * to {@code <logDir>/<name>.log}.
   */
  static Process start(Path logDir, String name, String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(FerriteCli.class.getName());
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(logDir.resolve(name + ".log").toFile()))
        .start();
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
      try (Stream<Path> s = Files.walk(shmDir)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
