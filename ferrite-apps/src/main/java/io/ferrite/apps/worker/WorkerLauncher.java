package io.ferrite.apps.worker;

import java.io.IOException;
import java.util.List;

/** Starts the processes of a sort: its workers, and the single-JVM baseline of {@code bench}. */
@FunctionalInterface
public interface WorkerLauncher {
  /**
   * Starts a JVM that runs {@code ferrite <args>} with {@code jvm}'s limits; its output goes to the
   * launcher's sink, each line labelled.
   */
  Process start(String label, List<String> args, Jvm jvm) throws IOException;

  /**
   * The shape of a JVM of the sort.
   *
   * @param heapBytes most heap
   * @param directBytes most direct-buffer memory
   * @param threads width of the common fork-join pool (what the parallel steps use)
   * @param quickStart a small job: a JVM that starts fast (C1 only, serial GC) beats one that runs
   *     fast
   * @param options further JVM options the application asks for (e.g. Carafe's workers' {@code
   *     -XX:-TieredCompilation}); a launcher that starts no JVM ignores them
   */
  record Jvm(
      long heapBytes, long directBytes, int threads, boolean quickStart, List<String> options) {
    public Jvm {
      options = List.copyOf(options);
    }

    /** A JVM with no further options. */
    public Jvm(long heapBytes, long directBytes, int threads, boolean quickStart) {
      this(heapBytes, directBytes, threads, quickStart, List.of());
    }
  }
}
