package io.ferrite.memory.rsort;

import java.io.IOException;
import java.util.List;

/** Starts the processes of a sort: its workers, and the single-JVM baseline of {@code bench}. */
@FunctionalInterface
public interface WorkerLauncher {
  /**
   * Starts a JVM that runs {@code ferrite <args>} with at most {@code heapBytes} of heap and {@code
   * directBytes} of direct buffers, and a common fork-join pool of {@code threads} threads (what
   * its parallel steps use); its output goes to the launcher's sink, each line labelled.
   */
  Process start(String label, List<String> args, long heapBytes, long directBytes, int threads)
      throws IOException;
}
