package io.ferrite.bench.graph;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Waits until this JVM's JIT compiler threads are idle, before a PageRank run is timed. The bench
 * JVM is the coordinator and the cluster's servers; its earlier phases (import, Dijkstra, the
 * reference PageRank, the previous worker count's run) leave C1 and C2 compiles queued, which then
 * ran during the next run's supersteps: with one worker process on the idle core, with two on a
 * core a worker computes on (measured: this JVM's compilers used 35-85 ms of CPU inside the 0.9 s
 * of a 2-worker run's supersteps; before the 1-worker run this waits about 1 s). The same wait
 * comes before every worker count. Linux only (the compiler threads are hidden from {@link
 * java.lang.management.ThreadMXBean}; their CPU time is read from {@code /proc/self/task});
 * elsewhere it does not wait.
 */
final class JitQuiet {
  /** How often the compilers' CPU time is read. */
  static final long PERIOD_MS = 100;

  /** Compiler CPU per period below which the compilers count as idle. */
  static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final Path TASKS = Path.of("/proc/self/task");

  private JitQuiet() {}

  /**
   * Waits until the compiler threads used less than {@link #IDLE_NANOS} of CPU in one {@link
   * #PERIOD_MS}, for at most {@code max}; returns how long it waited (ns).
   */
  static long await(Duration max) throws InterruptedException {
    long t0 = System.nanoTime();
    long last = compilerNanos();
    if (last < 0) {
      return 0;
    }
    while (System.nanoTime() - t0 < max.toNanos()) {
      Thread.sleep(PERIOD_MS);
      long now = compilerNanos();
      if (now < 0 || now - last < IDLE_NANOS) {
        break;
      }
      last = now;
    }
    return System.nanoTime() - t0;
  }

  /** CPU time (ns) of this JVM's live C1 and C2 compiler threads; -1 without {@code /proc}. */
  static long compilerNanos() {
    if (!Files.isDirectory(TASKS)) {
      return -1;
    }
    List<Path> tasks;
    try (Stream<Path> s = Files.list(TASKS)) {
      tasks = s.collect(Collectors.toList());
    } catch (IOException e) {
      return -1;
    }
    long sum = 0;
    for (Path t : tasks) {
      try {
        String comm = Files.readString(t.resolve("comm"), StandardCharsets.US_ASCII);
        if (comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler")) {
          // schedstat: "<ns on cpu> <ns waiting on a run queue> <timeslices>"
          String stat = Files.readString(t.resolve("schedstat"), StandardCharsets.US_ASCII);
          sum += Long.parseLong(stat.substring(0, stat.indexOf(' ')));
        }
      } catch (IOException | RuntimeException e) {
        // A compiler thread that ended (they come and go with the queue) between list and read.
      }
    }
    return sum;
  }
}
