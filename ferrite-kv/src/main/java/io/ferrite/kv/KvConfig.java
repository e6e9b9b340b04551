package io.ferrite.kv;

import io.ferrite.kernel.config.ConfigKeys;
import io.ferrite.kernel.config.FerriteConfig;
import java.util.List;

/**
 * The kv face's configuration keys, known to {@link FerriteConfig} through {@link ConfigKeys}
 * (META-INF/services) when the face is on the class path; read from the configuration the face is
 * given: a server's ({@code ServiceContext.config()}) or a client's ({@code
 * FerriteClient.config()}).
 */
public final class KvConfig implements ConfigKeys {
  /** Server: the kv log is rewritten as a snapshot past this size and twice its last size. */
  public static final String LOG_COMPACT = "kv.log.compact";

  /** Client: extent hints kept per table (where a value's extent is; 0 off). */
  public static final String EXTENT_HINTS = "kv.extent.hints";

  /** Server: whether a write may be applied on the thread that received it. */
  public static final String INLINE_WRITES = "kv.inline.writes";

  /**
   * Master: how often the kv directory looks for replicated shards short of copies and makes them
   * again in the background (besides at once after a failover or a lost copy); 0 turns the
   * automatic repair off ({@code ferrite kv rebalance} still repairs).
   */
  public static final String REPAIR_PERIOD = "kv.repair.period";

  /**
   * Server: how long after the master last acknowledged a heartbeat a server still serves its
   * replicated shards (docs/KV.md "Leases"); {@code auto} is half of {@code server.dead.timeout}.
   * Must be shorter than the master's {@code server.dead.timeout}: that is what makes a deposed
   * primary stop serving before its backup is promoted.
   */
  public static final String LEASE = "kv.lease";

  /** For {@link java.util.ServiceLoader}. */
  public KvConfig() {}

  @Override
  public List<Key> keys() {
    return List.of(
        new Key(
            LOG_COMPACT,
            "64m",
            "a server's kv log is rewritten as a snapshot past this and 2x its last size"),
        new Key(
            EXTENT_HINTS,
            Integer.toString(ExtentHints.DEFAULT_CAPACITY),
            "client: extent locations kept per table (a get then reads no table); 0 off"),
        new Key(
            INLINE_WRITES,
            "true",
            "server: apply a write on its RPC thread when it can; false queues every one"),
        new Key(
            REPAIR_PERIOD,
            "1s",
            "master: how often replicated shards short of copies are looked for and copied"
                + " again (also at once after a failover); 0 off"),
        new Key(
            LEASE,
            "auto",
            "server: replicated shards are served only this long after the master last heard"
                + " from the server (< server.dead.timeout); auto: half of it"));
  }

  @Override
  public void validate(FerriteConfig cfg) {
    logCompactBytes(cfg);
    extentHints(cfg);
    cfg.getBoolean(INLINE_WRITES);
    repairPeriod(cfg);
    lease(cfg);
  }

  /**
   * The kv lease ({@link #LEASE}): {@code auto} is half of {@code server.dead.timeout}; a set value
   * must be shorter than the dead timeout.
   */
  public static java.time.Duration lease(FerriteConfig cfg) {
    return io.ferrite.kernel.server.ServerLease.period(cfg, LEASE);
  }

  /** The automatic repair's period; zero when it is off. */
  public static java.time.Duration repairPeriod(FerriteConfig cfg) {
    String v = cfg.get(REPAIR_PERIOD).trim();
    if (v.equals("0") || v.equals("0s") || v.equals("0ms")) {
      return java.time.Duration.ZERO; // off (FerriteConfig's durations are > 0)
    }
    return cfg.getDuration(REPAIR_PERIOD);
  }

  /** The kv log size past which (and past twice its size after the last one) it is compacted. */
  public static long logCompactBytes(FerriteConfig cfg) {
    long n = cfg.getSize(LOG_COMPACT);
    if (n < 4096) {
      throw new IllegalArgumentException(LOG_COMPACT + ": " + n + " (expected: >= 4096)");
    }
    return n;
  }

  /** Extent hints per table, 0 to {@link ExtentHints#MAX_CAPACITY}. */
  public static int extentHints(FerriteConfig cfg) {
    int n = cfg.getInt(EXTENT_HINTS);
    if (n < 0 || n > ExtentHints.MAX_CAPACITY) {
      throw new IllegalArgumentException(
          EXTENT_HINTS + ": " + n + " (expected: 0 to " + ExtentHints.MAX_CAPACITY + ")");
    }
    return n;
  }

  public static boolean inlineWrites(FerriteConfig cfg) {
    return cfg.getBoolean(INLINE_WRITES);
  }
}
