package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.GraphLayout;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * What a Pregel job measured. The vertices' results stay in the graph (slot 0 of each vertex's
 * property area): {@link #values} and {@link #doubleValues} read them.
 *
 * @param job the job
 * @param bounds the partition bounds the job ran with (W + 1 internal ids)
 * @param edges adjacency entries per partition
 * @param superstepNanos per superstep, from its start by the coordinator until every worker had
 *     finished it (inbox, compute, outbox, write-back, barrier)
 * @param superstepMessages per superstep, the messages it put into the mailbox (after combining)
 * @param workerNanos per worker, its own time in all supersteps (inbox to outbox, without the
 *     barrier's wait): how even the partitions' loads were
 * @param loadNanos partitioning, loading the partitions and preparing the mailbox
 * @param totalNanos the whole job, from opening the graph to deleting the job's namespaces
 * @param halted whether the job ended because every vertex had halted and no message was in flight
 *     (false: it stopped at the superstep cap)
 */
public record PregelResult(
    PregelJob job,
    long[] bounds,
    long[] edges,
    long[] superstepNanos,
    long[] superstepMessages,
    long[] workerNanos,
    long loadNanos,
    long totalNanos,
    boolean halted) {

  /** Supersteps run. */
  public int supersteps() {
    return superstepNanos.length;
  }

  /** Messages through the mailbox over all supersteps. */
  public long messages() {
    return Arrays.stream(superstepMessages).sum();
  }

  /** Time of all supersteps. */
  public long computeNanos() {
    return Arrays.stream(superstepNanos).sum();
  }

  /** The vertices' results (slot 0) as longs, in internal-id order: read from the graph. */
  public long[] values(CarafeGraph graph) {
    return readValues(graph);
  }

  /** The vertices' results (slot 0) as doubles (e.g. PageRank's ranks). */
  public double[] doubleValues(CarafeGraph graph) {
    return readDoubleValues(graph);
  }

  /** Slot 0 of every vertex of {@code graph}, read in 4 MiB pieces. */
  public static long[] readValues(CarafeGraph graph) {
    int n = (int) graph.vertexCount();
    long[] out = new long[n];
    if (n == 0) {
      return out;
    }
    int per = Partitioner.PIECE_VERTICES;
    ByteBuffer b = GraphLayout.le(per * GraphLayout.VERTEX);
    try (Mapping m = graph.vertices(0, n).map(MemoryFlags.MAP_NO_BUFFER)) {
      for (int v0 = 0; v0 < n; v0 += per) {
        int count = Math.min(per, n - v0);
        m.readSync((long) v0 * GraphLayout.VERTEX, b.clear().limit(count * GraphLayout.VERTEX));
        for (int v = 0; v < count; v++) {
          out[v0 + v] = b.getLong(v * GraphLayout.VERTEX + GraphLayout.V_PROPS);
        }
      }
    }
    return out;
  }

  /** Slot 0 of every vertex of {@code graph} as a double. */
  public static double[] readDoubleValues(CarafeGraph graph) {
    long[] bits = readValues(graph);
    double[] out = new double[bits.length];
    for (int v = 0; v < bits.length; v++) {
      out[v] = Double.longBitsToDouble(bits[v]);
    }
    return out;
  }
}
