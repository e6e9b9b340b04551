package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * A Pregel program (Malewicz et al., SIGMOD 2010; Carafe, RStore §V-B): {@link #init} gives every
 * vertex its first state, then in each superstep {@link #compute} runs on every vertex that has not
 * voted to halt or that received messages; it reads the messages sent to it in the previous
 * superstep, updates its state, sends messages along its out-edges and may vote to halt. The job
 * ends when every vertex has voted to halt and no message is in flight (or at the superstep cap).
 *
 * <p>A vertex's state is two 64-bit slots ({@link Vertex#value()}, {@link Vertex#value1()}), kept
 * in the graph's property area and written back to RStore after every superstep; the result is slot
 * 0. A message is a 64-bit payload (a long, or a double's raw bits). An optional {@link Combiner}
 * folds the messages to one target into one, at the sender and at the receiver, so a superstep
 * moves at most one message per (partition, target) through the mailbox.
 *
 * <p>One instance serves every worker thread of a job: a program holds configuration only, never
 * per-vertex state. Programs that run in worker processes are named by a {@link #spec()} string
 * that {@link #parse} turns back into the program.
 */
public abstract class VertexProgram {
  /** How messages to one vertex fold into one, or {@link #NONE} to deliver them all. */
  public enum Combiner {
    /** Every message is delivered; a segment holds one per edge per superstep. */
    NONE,
    /** Payloads are doubles (raw bits); the vertex receives their sum. */
    SUM_DOUBLE,
    /** Payloads are longs; the vertex receives their minimum. */
    MIN_LONG
  }

  /** The combiner of this program's messages; {@link Combiner#NONE} unless overridden. */
  public Combiner combiner() {
    return Combiner.NONE;
  }

  /**
   * Refuses a graph the program cannot run on (before anything of the job is made).
   *
   * @throws FerriteException INVALID_ARGUMENT saying why
   */
  public void check(CarafeGraph graph) {}

  /**
   * A short run of a program: {@code program} for {@code supersteps} supersteps.
   *
   * @see #warmUp()
   */
  public record WarmUp(VertexProgram program, int supersteps) {
    public WarmUp {
      if (program == null || supersteps < 1) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "warm-up: program "
                + program
                + ", "
                + supersteps
                + " supersteps (expected: a program, >= 1)");
      }
    }
  }

  /**
   * A short run of this program whose supersteps together take every path a full run takes (e.g.
   * {@link PageRank} with 2 iterations: send only, receive and send, aggregate, normalize), or null
   * (the default) for none. A worker runs it on its partition in local memory while the job loads,
   * on scratch state, so that its JVM compiles the superstep loops (and sees every branch of {@link
   * #compute}) before the timed supersteps; nothing of it leaves the worker. Only for programs
   * whose {@code compute} has no effect beyond its vertex, its sends and the aggregate.
   */
  public WarmUp warmUp() {
    return null;
  }

  /** Sets vertex {@code v}'s initial state (both slots are 0 before). */
  public abstract void init(Vertex v);

  /** Runs one superstep on vertex {@code v}: its messages are those sent to it last superstep. */
  public abstract void compute(Context ctx, Vertex v, Messages messages);

  /** What {@link #parse} turns back into this program, for worker processes. */
  public abstract String spec();

  /**
   * The program of a spec: {@code pagerank:<iterations>} ({@link PageRank}) or {@code components}
   * ({@link ConnectedComponents}).
   *
   * @throws FerriteException INVALID_ARGUMENT for anything else
   */
  public static VertexProgram parse(String spec) {
    if (spec != null) {
      if (spec.equals(ConnectedComponents.SPEC)) {
        return new ConnectedComponents();
      }
      if (spec.startsWith(PageRank.SPEC + ":")) {
        try {
          return new PageRank(Integer.parseInt(spec.substring(PageRank.SPEC.length() + 1)));
        } catch (NumberFormatException e) {
          // falls through to the error below
        }
      }
    }
    throw new FerriteException(
        ErrorCode.INVALID_ARGUMENT,
        "program: '"
            + spec
            + "' (expected: '"
            + PageRank.SPEC
            + ":<iterations>' or '"
            + ConnectedComponents.SPEC
            + "')");
  }

  @Override
  public String toString() {
    return spec();
  }
}
