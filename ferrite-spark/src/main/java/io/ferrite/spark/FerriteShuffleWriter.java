package io.ferrite.spark;

import io.ferrite.nodes.Nodes;
import java.io.IOException;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.MapStatus$;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.BlockManagerId$;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.Product2;
import scala.collection.Iterator;

/**
 * Writes one map attempt: Spark's {@link ExternalSorter} partitions (and, with map-side combine,
 * aggregates and orders) the records as Spark's {@code SortShuffleWriter} does, spilling to local
 * disk under memory pressure; the sorted partitions then go to one {@link MapOutputFile}, named by
 * the map index and the attempt ({@code map-<index>-<taskAttemptId>}), so a retried or speculative
 * attempt never touches another's File. {@link #stop}{@code (true)} reports the partition lengths
 * with a location of the attempt's own ({@link #location}); which attempt's File reducers read is
 * the MapOutputTracker's choice.
 */
final class FerriteShuffleWriter<K, V, C> extends ShuffleWriter<K, V> {
  private final FerriteShuffleHandle<K, V, C> handle;
  private final long mapId;
  private final TaskContext context;
  private final ShuffleWriteMetricsReporter metrics;
  private final Nodes nodes;
  private final String storageClass;
  private ExternalSorter<K, V, ?> sorter;
  private MapOutputFile output;
  private long[] partitionLengths;
  private boolean stopping;

  FerriteShuffleWriter(
      FerriteShuffleHandle<K, V, C> handle,
      long mapId,
      TaskContext context,
      ShuffleWriteMetricsReporter metrics,
      Nodes nodes,
      String storageClass) {
    this.handle = handle;
    this.mapId = mapId;
    this.context = context;
    this.metrics = metrics;
    this.nodes = nodes;
    this.storageClass = storageClass;
  }

  @Override
  public void write(Iterator<Product2<K, V>> records) throws IOException {
    ShuffleDependency<K, V, C> dep = handle.dependency();
    if (dep.mapSideCombine()) {
      sorter =
          new ExternalSorter<K, V, C>(
              context,
              dep.aggregator(),
              Option.apply(dep.partitioner()),
              dep.keyOrdering(),
              dep.serializer());
    } else {
      // As SortShuffleWriter: without map-side combine neither aggregate nor sort here; the
      // reducer does both (it must merge every map's records anyway).
      sorter =
          new ExternalSorter<K, V, V>(
              context,
              Option.empty(),
              Option.apply(dep.partitioner()),
              Option.empty(),
              dep.serializer());
    }
    sorter.insertAll(records);
    int partitions = dep.partitioner().numPartitions();
    output =
        new MapOutputFile(
            nodes,
            handle.mapOutput(context.partitionId(), mapId),
            partitions,
            storageClass,
            metrics);
    sorter.writePartitionedMapOutput(dep.shuffleId(), mapId, output, metrics);
    partitionLengths = output.commitAllPartitions(sorter.getChecksums()).getPartitionLengths();
  }

  @Override
  public Option<MapStatus> stop(boolean success) {
    try {
      if (stopping) {
        return Option.empty();
      }
      stopping = true;
      if (success) {
        if (partitionLengths == null) {
          throw new IllegalStateException("stop(true) before write() finished");
        }
        return Option.apply(MapStatus$.MODULE$.apply(location(), partitionLengths, mapId));
      }
      if (output != null) {
        output.abort(null);
      }
      return Option.empty();
    } finally {
      if (sorter != null) {
        long t0 = System.nanoTime();
        sorter.stop();
        metrics.incWriteTime(System.nanoTime() - t0);
        sorter = null;
      }
    }
  }

  /**
   * Where the MapStatus says this output is: not the executor's own BlockManagerId but one of its
   * own per map attempt ({@code ferrite-<taskAttemptId>}, on the executor's host and port). The
   * output lives in Ferrite, not on the executor, so (a) an executor that dies takes no map output
   * with it (Spark drops the outputs of a lost executor's id, none of which is this), and (b) a
   * FetchFailed for this output makes Spark drop and re-run this output alone and "remove" an
   * executor id no BlockManager has, where the real id would drop every output the executor wrote
   * and unregister its live BlockManager (seen in local mode: the driver's, so later shuffle
   * cleanups reached no one).
   */
  private BlockManagerId location() {
    BlockManagerId real = SparkEnv.get().blockManager().shuffleServerId();
    return BlockManagerId$.MODULE$.apply(
        "ferrite-" + mapId, real.host(), real.port(), Option.empty());
  }

  @Override
  public long[] getPartitionLengths() {
    return partitionLengths;
  }
}
