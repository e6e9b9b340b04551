package io.ferrite.apps.carafe.pregel;

/**
 * Static PageRank with GraphX 3.5's semantics, exactly {@link
 * io.ferrite.apps.carafe.Reference#pageRank}: every rank starts at 1; in each of {@code iterations}
 * iterations a vertex with out-edges sends {@code rank / degree} along each, and every rank becomes
 * {@code 0.15 + 0.85 * (sum received)}. Then the ranks are scaled to sum to the vertex count
 * (SPARK-18847): the aggregator totals them, and one more superstep scales.
 *
 * <p>Supersteps: 0 sends the initial shares; 1 to {@code iterations} each finish an iteration (and
 * send the next shares, except the last, which aggregates the ranks); {@code iterations + 1}
 * normalizes and halts. Messages are summed by the {@link Combiner#SUM_DOUBLE} combiner. The rank
 * is slot 0, as a double.
 */
public final class PageRank extends VertexProgram {
  static final String SPEC = "pagerank";

  /** GraphX's reset probability (1 - damping). */
  public static final double RESET = io.ferrite.apps.carafe.Reference.RESET;

  private final int iterations;

  public PageRank(int iterations) {
    if (iterations < 0) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "iterations: " + iterations + " (expected: >= 0)");
    }
    this.iterations = iterations;
  }

  public int iterations() {
    return iterations;
  }

  @Override
  public Combiner combiner() {
    return Combiner.SUM_DOUBLE;
  }

  /** Two iterations: supersteps 0 (send), 1 (receive and send), 2 (aggregate), 3 (normalize). */
  @Override
  public WarmUp warmUp() {
    return new WarmUp(new PageRank(2), 4);
  }

  @Override
  public void init(Vertex v) {
    v.doubleValue(1.0);
  }

  @Override
  public void compute(Context ctx, Vertex v, Messages messages) {
    int s = ctx.superstep();
    if (s > iterations) {
      double total = ctx.previousAggregate();
      if (total > 0) {
        // As the reference: rank * (n / total), the same rounding.
        v.doubleValue(v.doubleValue() * (ctx.vertexCount() / total));
      }
      ctx.voteToHalt();
      return;
    }
    if (s > 0) {
      double sum = 0;
      for (int i = 0; i < messages.count(); i++) {
        sum += messages.getDouble(i);
      }
      v.doubleValue(RESET + (1 - RESET) * sum);
    }
    if (s < iterations) {
      int degree = v.degree();
      if (degree > 0) {
        ctx.sendToAllNeighbors(v.doubleValue() / degree);
      }
    } else {
      ctx.aggregate(v.doubleValue());
    }
  }

  @Override
  public String spec() {
    return SPEC + ":" + iterations;
  }
}
