package io.ferrite.spark;

import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.api.ShuffleDataIO;
import org.apache.spark.shuffle.api.ShuffleDriverComponents;
import org.apache.spark.shuffle.api.ShuffleExecutorComponents;
import org.apache.spark.shuffle.sort.io.LocalDiskShuffleDataIO;

/**
 * The {@code spark.shuffle.sort.io.plugin.class} to go with {@link FerriteShuffleManager} (which
 * sets it on the driver unless the user set another): its driver components say the shuffle's
 * storage is reliable — map outputs live in Ferrite, not in an executor — so Spark does not run
 * again, when an executor is lost mid-stage, the map tasks that executor had already finished
 * ({@code TaskSetManager.executorLost} re-enqueues them otherwise, found by {@code
 * FerriteShuffleLocalClusterTest}), and its dynamic allocation may release executors without
 * shuffle tracking.
 *
 * <p>The executor components are Spark's local-disk ones: {@link FerriteShuffleManager}'s writers
 * use their own and never ask for these; they are there for the interface. This class is for
 * Ferrite's shuffle only: with Spark's {@code SortShuffleManager} the claim would be false.
 */
public final class FerriteShuffleDataIO implements ShuffleDataIO {
  /** Spark's key for this plugin. */
  static final String KEY = "spark.shuffle.sort.io.plugin.class";

  private final SparkConf conf;

  public FerriteShuffleDataIO(SparkConf conf) {
    this.conf = conf;
  }

  @Override
  public ShuffleExecutorComponents executor() {
    return new LocalDiskShuffleDataIO(conf).executor();
  }

  @Override
  public ShuffleDriverComponents driver() {
    return new Driver(new LocalDiskShuffleDataIO(conf).driver());
  }

  /**
   * Spark's own driver components but for the claim: their {@code removeShuffle} is what tells the
   * BlockManagers, and so {@link FerriteShuffleManager#unregisterShuffle}, that a shuffle was
   * cleaned (Spark 3.5's ContextCleaner calls nothing else; without it no shuffle Directory was
   * removed before the application's end, found by {@code FerriteShuffleLocalTest}).
   */
  private static final class Driver implements ShuffleDriverComponents {
    private final ShuffleDriverComponents spark;

    Driver(ShuffleDriverComponents spark) {
      this.spark = spark;
    }

    @Override
    public Map<String, String> initializeApplication() {
      return spark.initializeApplication();
    }

    @Override
    public void cleanupApplication() {
      spark.cleanupApplication();
    }

    @Override
    public void registerShuffle(int shuffleId) {
      spark.registerShuffle(shuffleId);
    }

    @Override
    public void removeShuffle(int shuffleId, boolean blocking) {
      spark.removeShuffle(shuffleId, blocking);
    }

    @Override
    public boolean supportsReliableStorage() {
      return true;
    }
  }
}
