package io.ferrite.spark;

import io.ferrite.nodes.Nodes;
import io.ferrite.spark.MapOutputFetcher.FetchFailure;
import io.ferrite.spark.MapOutputFetcher.Fetched;
import io.ferrite.spark.MapOutputFetcher.MapOutput;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.Aggregator;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.FetchFailedException;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.Product2;
import scala.Tuple2;
import scala.Tuple3;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.Seq;
import scala.math.Ordering;

/**
 * Reads partitions [startPartition, endPartition) of the map outputs [startMap, endMap) that the
 * MapOutputTracker reports as the winners (so a loser's or a failed attempt's File is never read),
 * fetching several outputs at once ({@link MapOutputFetcher}); then, as Spark's {@code
 * BlockStoreShuffleReader}: Spark's stream wrapping (compression, encryption) and deserializer, the
 * dependency's aggregator (combiners when the map side combined, values otherwise) and its key
 * ordering ({@link ExternalSorter}). A map output that cannot be read raises {@link
 * FetchFailedException}, so Spark re-runs the map stage rather than fail the job or hang.
 */
final class FerriteShuffleReader<K, C> implements ShuffleReader<K, C> {
  private final FerriteShuffleHandle<K, ?, C> handle;
  private final int startMap;
  private final int endMap;
  private final int startPartition;
  private final int endPartition;
  private final TaskContext context;
  private final ShuffleReadMetricsReporter metrics;
  private final Nodes nodes;
  private final int prefetch;

  FerriteShuffleReader(
      FerriteShuffleHandle<K, ?, C> handle,
      int startMap,
      int endMap,
      int startPartition,
      int endPartition,
      TaskContext context,
      ShuffleReadMetricsReporter metrics,
      Nodes nodes,
      int prefetch) {
    this.handle = handle;
    this.startMap = startMap;
    this.endMap = endMap;
    this.startPartition = startPartition;
    this.endPartition = endPartition;
    this.context = context;
    this.metrics = metrics;
    this.nodes = nodes;
    this.prefetch = prefetch;
  }

  /** The winning attempts that hold data for these partitions, one entry per map output. */
  List<MapOutput> winners() {
    int shuffleId = handle.shuffleId();
    Iterator<Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>>> byExecutor =
        SparkEnv.get()
            .mapOutputTracker()
            .getMapSizesByExecutorId(shuffleId, startMap, endMap, startPartition, endPartition);
    List<MapOutput> outputs = new ArrayList<>();
    java.util.Set<Long> seen = new java.util.HashSet<>();
    while (byExecutor.hasNext()) {
      Tuple2<BlockManagerId, Seq<Tuple3<BlockId, Object, Object>>> e = byExecutor.next();
      Iterator<Tuple3<BlockId, Object, Object>> blocks = e._2().iterator();
      while (blocks.hasNext()) {
        Tuple3<BlockId, Object, Object> b = blocks.next();
        if (!(b._1() instanceof ShuffleBlockId id)) {
          throw new IllegalStateException(
              b._1() + ": a block the Ferrite shuffle never makes (push-based shuffle is off)");
        }
        // One entry per (map, non-empty partition): the File's range covers them all at once.
        if (seen.add(id.mapId())) {
          int mapIndex = (Integer) b._3();
          outputs.add(
              new MapOutput(e._1(), id.mapId(), mapIndex, handle.mapOutput(mapIndex, id.mapId())));
        }
      }
    }
    return outputs;
  }

  @Override
  @SuppressWarnings("unchecked")
  public Iterator<Product2<K, C>> read() {
    ShuffleDependency<K, ?, C> dep = handle.dependency();
    MapOutputFetcher fetcher =
        new MapOutputFetcher(
            nodes,
            dep.partitioner().numPartitions(),
            startPartition,
            endPartition,
            prefetch,
            winners());
    context.addTaskCompletionListener(
        (org.apache.spark.util.TaskCompletionListener) ctx -> fetcher.close());
    Iterator<Product2<Object, Object>> records =
        new Records(fetcher, dep.serializer().newInstance(), SparkEnv.get().serializerManager());
    Iterator<Product2<K, C>> aggregated;
    if (dep.aggregator().isDefined()) {
      if (dep.mapSideCombine()) {
        Aggregator<K, Object, C> agg = (Aggregator<K, Object, C>) dep.aggregator().get();
        aggregated =
            (Iterator<Product2<K, C>>)
                (Iterator<?>)
                    agg.combineCombinersByKey(
                        (Iterator<Product2<K, C>>) (Iterator<?>) records, context);
      } else {
        Aggregator<K, Object, C> agg = (Aggregator<K, Object, C>) dep.aggregator().get();
        aggregated =
            (Iterator<Product2<K, C>>)
                (Iterator<?>)
                    agg.combineValuesByKey(
                        (Iterator<Product2<K, Object>>) (Iterator<?>) records, context);
      }
    } else {
      aggregated = (Iterator<Product2<K, C>>) (Iterator<?>) records;
    }
    Option<Ordering<K>> ordering = dep.keyOrdering();
    Iterator<Product2<K, C>> result = aggregated;
    if (ordering.isDefined()) {
      ExternalSorter<K, C, C> sorter =
          new ExternalSorter<>(context, Option.empty(), Option.empty(), ordering, dep.serializer());
      result = sorter.insertAllAndUpdateMetrics(aggregated);
    }
    return new InterruptibleIterator<>(context, result);
  }

  /**
   * The records of every fetched map output, partition by partition: each partition is its own
   * compressed stream (Spark's writer wraps each one), so each is unwrapped and deserialized apart.
   */
  private final class Records extends AbstractIterator<Product2<Object, Object>> {
    private final MapOutputFetcher fetcher;
    private final SerializerInstance serializer;
    private final SerializerManager streams;
    private Fetched current;
    private int partition;
    private boolean merged;
    // The open partition's records; null before the first. (Not Iterator.empty(): its Java type
    // is Iterator<T> on Scala 2.13 but Iterator<Nothing$> on 2.12, and this source is built for
    // both, see ferrite-spark-3.5_2.12.)
    private Iterator<Tuple2<Object, Object>> records;

    Records(MapOutputFetcher fetcher, SerializerInstance serializer, SerializerManager streams) {
      this.fetcher = fetcher;
      this.serializer = serializer;
      this.streams = streams;
    }

    @Override
    public boolean hasNext() {
      while (records == null || !records.hasNext()) {
        if (current != null && partition < endPartition) {
          openPartition();
          continue;
        }
        if (!fetcher.hasNext()) {
          if (!merged) {
            // As BlockStoreShuffleReader: the task's read metrics are merged once, when done.
            merged = true;
            context.taskMetrics().mergeShuffleReadMetrics();
          }
          return false;
        }
        long t0 = System.nanoTime();
        try {
          current = fetcher.next();
        } catch (FetchFailure f) {
          throw sneaky(
              new FetchFailedException(
                  f.output.location(),
                  handle.shuffleId(),
                  f.output.mapId(),
                  f.output.mapIndex(),
                  startPartition,
                  f.getMessage(),
                  f.getCause()));
        }
        metrics.incFetchWaitTime((System.nanoTime() - t0) / 1_000_000);
        metrics.incRemoteBlocksFetched(1);
        metrics.incRemoteBytesRead(current.data().remaining());
        partition = startPartition;
      }
      return true;
    }

    private void openPartition() {
      int p = partition++;
      Fetched f = current;
      if (partition == endPartition) {
        // This output's last partition: drop the reference so its buffer can go with the next.
        current = null;
      }
      long[] off = f.offsets();
      int from = (int) (off[p - startPartition] - off[0]);
      int to = (int) (off[p - startPartition + 1] - off[0]);
      if (to == from) {
        return;
      }
      InputStream in =
          streams.wrapStream(
              new ShuffleBlockId(handle.shuffleId(), f.output().mapId(), p),
              new ByteArrayInputStream(f.data().array(), from, to - from));
      records = serializer.deserializeStream(in).asKeyValueIterator();
    }

    @Override
    public Product2<Object, Object> next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      metrics.incRecordsRead(1);
      return records.next();
    }
  }

  /** Throws a checked exception through Scala's Iterator, which declares none (as Scala does). */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
    throw (T) t;
  }
}
