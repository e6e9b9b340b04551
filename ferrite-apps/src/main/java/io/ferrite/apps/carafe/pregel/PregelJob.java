package io.ferrite.apps.carafe.pregel;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.time.Duration;
import java.util.List;

/**
 * One Pregel job on a stored graph (Carafe, RStore §V-B): which program, on how many partition
 * workers, for at most how many supersteps.
 *
 * @param graph the stored graph's name ({@link io.ferrite.apps.carafe.CarafeGraph#open})
 * @param program the program's spec, {@link VertexProgram#parse}: {@code pagerank:<iterations>} or
 *     {@code components}
 * @param workers partition workers, 1 to {@link #MAX_WORKERS}
 * @param maxSupersteps the job stops after this many supersteps even if vertices are still active
 * @param prefix prepended to the job's namespace names (two jobs at once need different ones)
 * @param phaseTimeout the longest a superstep (or the load) may take before the job fails
 */
public record PregelJob(
    String graph,
    String program,
    int workers,
    int maxSupersteps,
    String prefix,
    Duration phaseTimeout) {

  /** Most workers: each worker's area in the control region holds a row of the mailbox grid. */
  public static final int MAX_WORKERS = 64;

  public PregelJob {
    if (graph == null || graph.isEmpty()) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, "graph: none given");
    }
    VertexProgram.parse(program); // refuses an unknown spec here, before anything runs
    if (workers < 1 || workers > MAX_WORKERS) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "workers: " + workers + " (expected: 1 to " + MAX_WORKERS + ")");
    }
    if (maxSupersteps < 1) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "supersteps: " + maxSupersteps + " (expected: >= 1)");
    }
    prefix = prefix == null ? "" : prefix;
    if (phaseTimeout == null || phaseTimeout.isNegative() || phaseTimeout.isZero()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "phase timeout: " + phaseTimeout + " (expected: > 0)");
    }
  }

  /** A job with no prefix, at most 10 000 supersteps, and a 10 minute phase timeout. */
  public static PregelJob of(String graph, String program, int workers) {
    return new PregelJob(graph, program, workers, 10_000, "", Duration.ofMinutes(10));
  }

  /** The control namespace: the barrier and every worker's area ({@link PregelLayout}). */
  public String controlNamespace() {
    return prefix + "pregel.control";
  }

  /** The shared mailbox's namespace: one allocation holding the W x W grid ({@link Mailbox}). */
  public String mailboxNamespace() {
    return prefix + "pregel.mailbox";
  }

  /** Every namespace the job makes (and deletes, on success and on failure). */
  public List<String> namespaces() {
    return List.of(controlNamespace(), mailboxNamespace());
  }
}
