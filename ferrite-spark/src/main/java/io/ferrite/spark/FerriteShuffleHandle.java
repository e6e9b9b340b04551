package io.ferrite.spark;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.shuffle.BaseShuffleHandle;

/**
 * A shuffle registered with {@link FerriteShuffleManager}: Spark's handle plus the nodes-face
 * directory that holds the shuffle's map outputs, fixed by the driver so that executors need not
 * know the application id or the root.
 */
public final class FerriteShuffleHandle<K, V, C> extends BaseShuffleHandle<K, V, C> {
  private static final long serialVersionUID = 1L;

  private final String dir;

  FerriteShuffleHandle(int shuffleId, ShuffleDependency<K, V, C> dependency, String dir) {
    super(shuffleId, dependency);
    this.dir = dir;
  }

  /** The shuffle's directory, {@code <root>/<appId>/shuffle-<id>}. */
  public String dir() {
    return dir;
  }

  /** The File of one map attempt: its map index and Spark's map id (the task attempt id). */
  String mapOutput(int mapIndex, long mapId) {
    return mapOutput(dir, mapIndex, mapId);
  }

  /** The File of one map attempt in the shuffle Directory {@code dir}. */
  static String mapOutput(String dir, int mapIndex, long mapId) {
    return dir + "/map-" + mapIndex + "-" + mapId;
  }
}
