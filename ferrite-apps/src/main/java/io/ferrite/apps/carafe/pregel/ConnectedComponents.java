package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * Connected components of an undirected graph by min-label propagation, as {@link
 * io.ferrite.apps.carafe.Reference#components}: every vertex starts with its own id and sends it to
 * its neighbours; a vertex that receives a smaller label takes it and sends it on; every vertex
 * votes to halt after each step, so the job ends when no label changes. The label (the smallest id
 * in the component) is slot 0. Messages are folded by the {@link Combiner#MIN_LONG} combiner.
 */
public class ConnectedComponents extends VertexProgram {
  static final String SPEC = "components";

  @Override
  public Combiner combiner() {
    return Combiner.MIN_LONG;
  }

  @Override
  public void check(CarafeGraph graph) {
    if (!graph.undirected()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "connected components need an undirected graph (every edge stored both ways); "
              + graph
              + " is directed: import it as undirected");
    }
  }

  /** Supersteps 0 (send), 1 and 2 (take a smaller label and send it on). */
  @Override
  public WarmUp warmUp() {
    return new WarmUp(new ConnectedComponents(), 3);
  }

  @Override
  public void init(Vertex v) {
    v.value(v.id());
  }

  @Override
  public void compute(Context ctx, Vertex v, Messages messages) {
    if (ctx.superstep() == 0) {
      ctx.sendToAllNeighbors(v.value());
    } else {
      long min = Long.MAX_VALUE;
      for (int i = 0; i < messages.count(); i++) {
        min = Math.min(min, messages.get(i));
      }
      if (min < v.value()) {
        v.value(min);
        ctx.sendToAllNeighbors(min);
      }
    }
    ctx.voteToHalt();
  }

  @Override
  public String spec() {
    return SPEC;
  }
}
