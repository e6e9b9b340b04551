package io.ferrite.spark;

import io.ferrite.nodes.Nodes;
import java.io.IOException;
import java.util.Map;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkException;
import org.apache.spark.TaskContext;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.MapStatus$;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.api.ShuffleExecutorComponents;
import org.apache.spark.shuffle.api.ShuffleMapOutputWriter;
import org.apache.spark.shuffle.sort.BypassMergeSortShuffleHandle;
import org.apache.spark.shuffle.sort.FerriteBypass;
import org.apache.spark.shuffle.sort.SerializedShuffleHandle;
import org.apache.spark.shuffle.sort.SortShuffleManager$;
import org.apache.spark.shuffle.sort.SortShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleWriter$;
import org.apache.spark.shuffle.sort.UnsafeShuffleWriter;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.BlockManagerId$;
import scala.Option;
import scala.Product2;
import scala.collection.Iterator;

/**
 * Writes one map attempt with the writer Spark's own {@code SortShuffleManager} would pick for the
 * dependency, so partitioning, sorting, spilling and serialization are Spark's: the bypass writer
 * for few partitions without map-side combine, the serialized (unsafe) writer when the serializer
 * can relocate records (Kryo, Spark SQL's rows), {@link SortShuffleWriter} with its {@code
 * ExternalSorter} otherwise. Each writes through {@link ShuffleExecutorComponents} to one {@link
 * MapOutputFile}, named by the map index and the attempt ({@code map-<index>-<taskAttemptId>}), so
 * a retried or speculative attempt never touches another's File. {@link #stop}{@code (true)}
 * reports the partition lengths with a location of the attempt's own ({@link #location}); {@code
 * stop(false)} drops the attempt's File (Spark's writers leave that to their temporary files).
 */
final class FerriteShuffleWriter<K, V, C> extends ShuffleWriter<K, V> {
  private final long mapId;
  private final ShuffleWriter<K, V> spark;
  private final Components components;
  private boolean stopped;

  @SuppressWarnings("unchecked")
  FerriteShuffleWriter(
      FerriteShuffleHandle<K, V, C> handle,
      long mapId,
      TaskContext context,
      ShuffleWriteMetricsReporter metrics,
      Nodes nodes,
      String storageClass)
      throws SparkException {
    this.mapId = mapId;
    this.components =
        new Components(
            nodes, handle.mapOutput(context.partitionId(), mapId), storageClass, metrics);
    ShuffleDependency<K, V, C> dep = handle.dependency();
    SparkEnv env = SparkEnv.get();
    SparkConf conf = env.conf();
    BlockManager bm = env.blockManager();
    if (SortShuffleWriter$.MODULE$.shouldBypassMergeSort(conf, dep)) {
      this.spark =
          FerriteBypass.writer(
              bm,
              new BypassMergeSortShuffleHandle<>(
                  handle.shuffleId(),
                  (ShuffleDependency<K, V, V>) (ShuffleDependency<?, ?, ?>) dep),
              mapId,
              conf,
              metrics,
              components);
    } else if (SortShuffleManager$.MODULE$.canUseSerializedShuffle(dep)) {
      this.spark =
          new UnsafeShuffleWriter<>(
              bm,
              context.taskMemoryManager(),
              new SerializedShuffleHandle<>(
                  handle.shuffleId(),
                  (ShuffleDependency<K, V, V>) (ShuffleDependency<?, ?, ?>) dep),
              mapId,
              context,
              conf,
              metrics,
              components);
    } else {
      this.spark = new SortShuffleWriter<>(handle, mapId, context, metrics, components);
    }
  }

  @Override
  public void write(Iterator<Product2<K, V>> records) throws IOException {
    spark.write(records);
  }

  @Override
  public Option<MapStatus> stop(boolean success) {
    if (stopped) {
      return Option.empty();
    }
    stopped = true;
    boolean done = false;
    try {
      Option<MapStatus> status = spark.stop(success);
      done = success && status.isDefined();
      if (!done) {
        return status;
      }
      return Option.apply(MapStatus$.MODULE$.apply(location(), getPartitionLengths(), mapId));
    } finally {
      if (!done) {
        components.abort();
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
    return spark.getPartitionLengths();
  }

  /** Hands Spark's writer this attempt's {@link MapOutputFile}; remembers it to abort it. */
  private static final class Components implements ShuffleExecutorComponents {
    private final Nodes nodes;
    private final String path;
    private final String storageClass;
    private final ShuffleWriteMetricsReporter metrics;
    private MapOutputFile output;

    Components(Nodes nodes, String path, String storageClass, ShuffleWriteMetricsReporter metrics) {
      this.nodes = nodes;
      this.path = path;
      this.storageClass = storageClass;
      this.metrics = metrics;
    }

    @Override
    public void initializeExecutor(String appId, String execId, Map<String, String> extraConfigs) {}

    @Override
    public ShuffleMapOutputWriter createMapOutputWriter(
        int shuffleId, long mapTaskId, int numPartitions) {
      if (output != null) {
        throw new IllegalStateException(path + ": a map attempt writes one output");
      }
      output = new MapOutputFile(nodes, path, numPartitions, storageClass, metrics);
      return output;
    }

    void abort() {
      if (output != null) {
        output.abort(null);
      }
    }
  }
}
