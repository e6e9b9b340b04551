package org.apache.spark.shuffle.sort;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.api.ShuffleExecutorComponents;
import org.apache.spark.storage.BlockManager;

/**
 * Reaches Spark's {@link BypassMergeSortShuffleWriter}, whose constructor is package-private, so
 * that {@code io.ferrite.spark.FerriteShuffleManager} picks the same writer as Spark's own {@code
 * SortShuffleManager} for a shuffle of few partitions without map-side combine (one serialized
 * stream per partition, no sort), writing to Ferrite through its {@code ShuffleExecutorComponents}.
 */
public final class FerriteBypass {
  private FerriteBypass() {}

  public static <K, V> ShuffleWriter<K, V> writer(
      BlockManager blockManager,
      BypassMergeSortShuffleHandle<K, V> handle,
      long mapId,
      SparkConf conf,
      ShuffleWriteMetricsReporter metrics,
      ShuffleExecutorComponents components)
      throws SparkException {
    return new BypassMergeSortShuffleWriter<>(
        blockManager, handle, mapId, conf, metrics, components);
  }
}
