package io.ferrite.fabric.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs a main class in a child JVM that has a small tmpfs of its own: {@code unshare -rm} gives it
 * a user and a mount namespace, a tmpfs of the asked size is mounted at {@code mountPoint} there
 * (over an existing directory such as /dev/shm, or one made for it), and the mount goes with the
 * process, so the host's file systems are never filled or touched. A test that fills a tmpfs this
 * way sees a full file system's real behaviour (a fault on first touch of an unbacked page kills
 * the JVM: exit 134) without risking the host's RAM.
 *
 * <p>Aborts the calling test ({@link Assumptions}) where no such namespace or mount can be made;
 * fails it if the child exits non-zero or outlives {@code timeout} (then it is killed). The child's
 * output (stdout and stderr) goes to a file, so no reader thread is needed.
 */
public final class PrivateTmpfs {
  private PrivateTmpfs() {}

  /**
   * Runs {@code mainClass} with {@code args} and this JVM's class path on a private tmpfs of {@code
   * size} (mount's syntax: "8m") at {@code mountPoint}, and returns the lines it printed, JVM and
   * logger noise dropped.
   */
  public static List<String> run(
      Path mountPoint, String size, Duration timeout, String mainClass, String... args)
      throws IOException, InterruptedException {
    boolean made = !Files.exists(mountPoint);
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    StringBuilder script =
        new StringBuilder()
            .append("mkdir -p ")
            .append(mountPoint)
            .append(" && mount -t tmpfs -o size=")
            .append(size)
            .append(" tmpfs ")
            .append(mountPoint)
            // exec: the process started here is the JVM itself, so killing it stops everything.
            .append(" && exec \"$0\" -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp \"$1\" ")
            .append(mainClass);
    for (String a : args) {
      script.append(' ').append(a);
    }
    List<String> cmd =
        List.of(
            "unshare",
            "-rm",
            "sh",
            "-c",
            script.toString(),
            javaBin,
            System.getProperty("java.class.path"));
    Path log = Files.createTempFile("ferrite-tmpfs-child-", ".log");
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    } catch (IOException e) {
      Files.deleteIfExists(log);
      Assumptions.abort("no unshare here: " + e);
      throw e;
    }
    try {
      boolean ended = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
      String out = Files.readString(log, StandardCharsets.UTF_8);
      assertTrue(ended, "the child did not end within " + timeout + ":\n" + out);
      if (out.contains("unshare failed") || out.contains("mount: ")) {
        Assumptions.abort("no private tmpfs possible here: " + out);
      }
      assertEquals(0, p.exitValue(), "the child died (a SIGBUS is exit 134):\n" + out);
      List<String> lines = new ArrayList<>(out.lines().toList());
      lines.removeIf(l -> l.startsWith("WARNING") || l.contains("System.Logger"));
      return lines;
    } finally {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor();
      Files.deleteIfExists(log);
      if (made) {
        Files.deleteIfExists(mountPoint); // the mount went with the namespace
      }
    }
  }
}
