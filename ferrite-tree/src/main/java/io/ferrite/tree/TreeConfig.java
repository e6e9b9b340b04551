package io.ferrite.tree;

import io.ferrite.kernel.config.ConfigKeys;
import io.ferrite.kernel.config.FerriteConfig;
import java.util.List;

/**
 * The tree face's configuration keys, known to {@link FerriteConfig} through {@link ConfigKeys}
 * (META-INF/services) when the face is on the class path; read by the memory server's tree service.
 */
public final class TreeConfig implements ConfigKeys {
  /** Server: the size of one meganode region (Cell: 64 MiB). */
  public static final String MEGANODE_SIZE = "tree.meganode.size";

  /** Server: the size of one small node inside a meganode (Cell: 1 KiB). */
  public static final String NODE_SIZE = "tree.node.size";

  /** Server: the size of one key-value extent region of a tree. */
  public static final String EXTENT_REGION_SIZE = "tree.extent.region.size";

  /** Server: how many extent regions one tree's meganode may use. */
  public static final String EXTENT_REGIONS = "tree.extent.regions";

  /**
   * Server: what the tree service does with each acknowledged write: {@code none} keeps it in DRAM
   * only (the kv face's default), {@code interval} appends it to the server's tree log, fsynced
   * every 100 ms, {@code always} answers only once its record is fsynced (group commit). The log is
   * replayed on restart (docs/TREE.md, Durability).
   */
  public static final String LOG_SYNC = "tree.log.sync";

  /** Server: the tree log is rewritten from the live meganodes past this and 2x its last size. */
  public static final String LOG_COMPACT = "tree.log.compact";

  /**
   * Server: where a leaf meganode split puts the new right meganode: {@code spread} (the default)
   * round-robin over the live memory servers, this one included (docs/TREE.md "Meganodes on several
   * servers"), {@code local} always on the splitting server. With one server both are local.
   * Internal meganodes always stay on the tree's home server.
   */
  public static final String PLACEMENT = "tree.placement";

  /** The values of {@link #PLACEMENT}. */
  public enum Placement {
    LOCAL,
    SPREAD
  }

  /** The {@link #PLACEMENT} policy. */
  public static Placement placement(FerriteConfig cfg) {
    String v = cfg.get(PLACEMENT);
    try {
      return Placement.valueOf(v.trim().toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(PLACEMENT + ": " + v + " (expected: local or spread)", e);
    }
  }

  /** The values of {@link #LOG_SYNC}. */
  public enum LogSync {
    NONE,
    INTERVAL,
    ALWAYS
  }

  // Client keys (read by TreeClient from the client's configuration).

  /** Client: bytes of a tree handle's caches of upper nodes and meganode ranges (Cell: 128 MiB). */
  public static final String CACHE_BYTES = "tree.cache.bytes";

  /** Client: the locality selector's moving-average window, in samples per server and path. */
  public static final String SELECTOR_SAMPLES = "tree.selector.samples";

  /** Client: the selector drops a sample farther than this many standard deviations (K). */
  public static final String SELECTOR_OUTLIER = "tree.selector.outlier";

  /** Client: the selector's exploration probability (the path estimated worse is taken). */
  public static final String SELECTOR_EXPLORE = "tree.selector.explore";

  /** Client: the selector's factor m on the client path's cost (1: lower latency wins). */
  public static final String SELECTOR_FACTOR = "tree.selector.factor";

  /** Client: a server's selector history is forgotten after this long without a sample. */
  public static final String SELECTOR_IDLE = "tree.selector.idle";

  /** Client: the selector weighs latencies by this client's searches in flight (literal JSQ). */
  public static final String SELECTOR_QUEUES = "tree.selector.queues";

  /** Client: the selector times 1 in this many searches while its estimate is steady. */
  public static final String SELECTOR_SAMPLING = "tree.selector.sampling";

  /** Client: searches of one selector exploration by one thread, the first not sampled (1: it). */
  public static final String SELECTOR_BURST = "tree.selector.burst";

  /** For {@link java.util.ServiceLoader}. */
  public TreeConfig() {}

  @Override
  public List<Key> keys() {
    return List.of(
        // Client keys first, in their own group (server keys follow).
        new Key(
            CACHE_BYTES,
            "128m",
            "client: bytes of a tree handle's cache of upper nodes and meganode ranges; 0 off"),
        new Key(SELECTOR_SAMPLES, "100", "client: latency samples the path selector averages"),
        new Key(
            SELECTOR_OUTLIER,
            "3",
            "client: the selector drops samples beyond this many standard deviations"),
        new Key(SELECTOR_EXPLORE, "0.01", "client: probability the selector tries the worse path"),
        new Key(
            SELECTOR_FACTOR,
            "1",
            "client: m, weight of the client path's cost (1: lower latency; >1 favours servers)"),
        new Key(SELECTOR_IDLE, "3s", "client: the selector forgets a server idle this long"),
        new Key(
            SELECTOR_QUEUES,
            "false",
            "client: true: the selector compares q_s*T_s with m*q_r*T_r (searches in flight)"),
        new Key(
            SELECTOR_SAMPLING,
            "16",
            "client: the selector times 1 in this many searches while steady (1: every one)"),
        new Key(
            SELECTOR_BURST,
            "4",
            "client: searches of one selector exploration, the first not sampled (1: sampled)"),
        new Key(MEGANODE_SIZE, "64m", "server: bytes of one meganode region (Cell: 64 MiB)"),
        new Key(NODE_SIZE, "1k", "server: bytes of one small node in a meganode (Cell: 1 KiB)"),
        new Key(EXTENT_REGION_SIZE, "16m", "server: bytes of one key-value extent region"),
        new Key(EXTENT_REGIONS, "16", "server: extent regions one meganode's pairs may use"),
        new Key(
            LOG_SYNC,
            "none",
            "server: tree writes none (DRAM only), logged and fsynced every 100 ms (interval),"
                + " or fsynced before acknowledged (always)"),
        new Key(
            PLACEMENT,
            "spread",
            "server: a leaf meganode split's new meganode goes round-robin over the live servers"
                + " (spread) or stays on the splitting server (local)"),
        new Key(
            LOG_COMPACT,
            "64m",
            "server: the tree log is rewritten from the live meganodes past this and 2x its last"
                + " size"));
  }

  @Override
  public void validate(FerriteConfig cfg) {
    long node = cfg.getSize(NODE_SIZE);
    if (node < 128 || node > 65536 || node % 8 != 0) {
      throw new IllegalArgumentException(
          NODE_SIZE + ": " + node + " (expected: a multiple of 8, 128 to 65536)");
    }
    long mega = cfg.getSize(MEGANODE_SIZE);
    if (mega < 3 * node || mega > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new IllegalArgumentException(
          MEGANODE_SIZE + ": " + mega + " (expected: 3 nodes to 1 GiB)");
    }
    long extent = cfg.getSize(EXTENT_REGION_SIZE);
    if (extent < 4096 || extent > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new IllegalArgumentException(
          EXTENT_REGION_SIZE + ": " + extent + " (expected: 4 KiB to 1 GiB)");
    }
    logSync(cfg);
    logCompactBytes(cfg);
    placement(cfg);

    selector(cfg);
    if (cfg.getSize(CACHE_BYTES) < 0) {
      throw new IllegalArgumentException(
          CACHE_BYTES + ": " + cfg.get(CACHE_BYTES) + " (expected: >= 0)");
    }
    int regions = cfg.getInt(EXTENT_REGIONS);
    if (regions < 1 || regions > 4096) {
      throw new IllegalArgumentException(
          EXTENT_REGIONS + ": " + regions + " (expected: 1 to 4096)");
    }
  }

  /** The {@link #LOG_SYNC} policy. */
  public static LogSync logSync(FerriteConfig cfg) {
    String v = cfg.get(LOG_SYNC);
    try {
      return LogSync.valueOf(v.trim().toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          LOG_SYNC + ": " + v + " (expected: none, interval or always)", e);
    }
  }

  /** The {@link #LOG_COMPACT} size. */
  public static long logCompactBytes(FerriteConfig cfg) {
    long n = cfg.getSize(LOG_COMPACT);
    if (n < 4096) {
      throw new IllegalArgumentException(LOG_COMPACT + ": " + n + " (expected: >= 4096)");
    }
    return n;
  }

  /** The selector's settings from {@code cfg}; IllegalArgumentException naming a bad key. */
  static PathSelector.Settings selector(FerriteConfig cfg) {
    int samples = cfg.getInt(SELECTOR_SAMPLES);
    double k = number(cfg, SELECTOR_OUTLIER);
    double explore = number(cfg, SELECTOR_EXPLORE);
    double factor = number(cfg, SELECTOR_FACTOR);
    long idle = cfg.getDuration(SELECTOR_IDLE).toNanos();
    try {
      return new PathSelector.Settings(
          samples,
          k,
          explore,
          factor,
          idle,
          cfg.getBoolean(SELECTOR_QUEUES),
          cfg.getInt(SELECTOR_SAMPLING),
          cfg.getInt(SELECTOR_BURST));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("tree.selector: " + e.getMessage(), e);
    }
  }

  private static double number(FerriteConfig cfg, String key) {
    try {
      return Double.parseDouble(cfg.get(key));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": " + cfg.get(key) + " (expected: a number)", e);
    }
  }
}
