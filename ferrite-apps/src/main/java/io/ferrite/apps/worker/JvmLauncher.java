package io.ferrite.apps.worker;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts {@code java -cp <this JVM's class path> <mainClass> <args>}: the same build as the caller,
 * with its own heap and direct-memory limits, the {@code -D} options of this JVM (e.g. Netty's leak
 * detection level), and a common fork-join pool of the given width (so that {@link
 * java.util.Arrays#parallelSort} runs on 2 threads on 2 cores, where the default width is 1, and W
 * worker JVMs sharing the cores get a share each). Each output line of the process is copied to
 * {@code sink} as {@code "<label>: <line>"} by a daemon thread named after the label.
 *
 * <p>The system property {@value #OPTIONS} (e.g. {@code
 * -Dferrite.worker.jvm.options="-XX:+UseSerialGC -XX:+PrintCompilation"}) adds JVM options, split
 * at white space, to every JVM this starts: for measuring a worker flag without a rebuild, and for
 * a site whose workers need one.
 */
public final class JvmLauncher implements WorkerLauncher {
  static final String PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";

  /** Extra options for the started JVMs, white-space separated. */
  public static final String OPTIONS = "ferrite.worker.jvm.options";

  private final String mainClass;
  private final PrintStream sink;

  public JvmLauncher(String mainClass, PrintStream sink) {
    this.mainClass = mainClass;
    this.sink = sink;
  }

  @Override
  public Process start(String label, List<String> args, Jvm jvm) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + mib(jvm.heapBytes()) + "m");
    cmd.add("-XX:MaxDirectMemorySize=" + mib(jvm.directBytes()) + "m");
    cmd.add("-D" + PARALLELISM + "=" + Math.max(1, jvm.threads()));
    if (jvm.quickStart()) {
      cmd.add("-XX:TieredStopAtLevel=1");
      cmd.add("-XX:+UseSerialGC");
    }
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("-D") && !a.startsWith("-D" + PARALLELISM + "=")) {
        cmd.add(a);
      }
    }
    cmd.addAll(jvm.options());
    // Last: HotSpot takes the last of two contradicting flags, so the property overrides.
    cmd.addAll(options(System.getProperty(OPTIONS, "")));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    Thread pump =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                  if (sink != null) {
                    sink.println(label + ": " + line);
                  }
                }
              } catch (IOException e) {
                // The process is gone; its exit status says how.
              }
            },
            "rsort-output-" + label.replace(' ', '-'));
    pump.setDaemon(true);
    pump.start();
    return p;
  }

  /** {@code spec} split at white space, without empty parts. */
  static List<String> options(String spec) {
    List<String> o = new ArrayList<>();
    for (String s : spec.trim().split("\\s+")) {
      if (!s.isEmpty()) {
        o.add(s);
      }
    }
    return o;
  }

  private static long mib(long bytes) {
    return Math.max(16, (bytes + (1 << 20) - 1) >> 20);
  }
}
