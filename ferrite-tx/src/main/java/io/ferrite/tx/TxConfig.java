package io.ferrite.tx;

import io.ferrite.kernel.config.ConfigKeys;
import io.ferrite.kernel.config.FerriteConfig;
import java.util.List;

/**
 * The tx face's configuration keys, known to {@link FerriteConfig} through {@link ConfigKeys}
 * (META-INF/services) when the face is on the class path; read by the memory server's tx service.
 */
public final class TxConfig implements ConfigKeys {
  /** Server: the bytes of one tx region (FaRM: 2 GiB; Ferrite's regions are at most 1 GiB). */
  public static final String REGION_SIZE = "tx.region.size";

  /** Server: the bytes of one slab; every slab holds objects of one size class. */
  public static final String SLAB_SIZE = "tx.slab.size";

  /** Server: the largest object payload, in bytes. */
  public static final String OBJECT_MAX = "tx.object.max";

  /**
   * Server: how long a transaction's locks stay held at a participant without a COMMIT or ABORT
   * from its coordinator; past it the participant resolves the transaction with its decider.
   */
  public static final String LOCK_LEASE = "tx.lock.lease";

  /**
   * Master: how many copies of a new tx region are placed (a primary and {@code tx.replicas - 1}
   * backups, on distinct live servers; fewer when fewer servers are alive).
   */
  public static final String REPLICAS = "tx.replicas";

  /**
   * Server: when a copy's log of a region is fsynced: {@code always} (before the copy acknowledges
   * the record: group commit), {@code interval} (every {@link #LOG_INTERVAL}) or {@code none}
   * (never: the page cache only).
   */
  public static final String LOG_SYNC = "tx.log.sync";

  /** Server: how often the logs are fsynced under {@code tx.log.sync=interval}. */
  public static final String LOG_INTERVAL = "tx.log.interval";

  /**
   * Server: a region copy's log past this many bytes (and twice its size after its last checkpoint)
   * is rewritten as the copy's image.
   */
  public static final String LOG_CHECKPOINT = "tx.log.checkpoint";

  /**
   * Server: how long a tx server serves its regions after a heartbeat the master acknowledged
   * (docs/TX.md "Leases"); {@code auto} is half of {@code server.dead.timeout}, a set value must be
   * shorter than it.
   */
  public static final String LEASE = "tx.lease";

  /** The tx master lease's length ({@link #LEASE}). */
  public static java.time.Duration lease(FerriteConfig cfg) {
    return io.ferrite.kernel.server.ServerLease.period(cfg, LEASE);
  }

  /**
   * Server: milliseconds of pause after each object a re-replication fill copies (0: none, objects
   * go in batches of up to 32 KiB); tests slow a fill down with it to stop its target midway.
   */
  public static final String FILL_PAUSE = "tx.fill.pause.ms";

  /**
   * Server: how many recent decisions (and outcomes) a tx server, a region's log and a backup's
   * copy remember for late messages; a commit whose other participant regions have not resolved it
   * is kept beyond it (pinned: docs/TX.md "Truncation"), and the server warns while more than this
   * many are pinned. Lowered by tests to make the bound reachable.
   */
  public static final String DECISIONS_KEPT = "tx.decisions.kept";

  /** For {@link java.util.ServiceLoader}. */
  public TxConfig() {}

  @Override
  public List<Key> keys() {
    return List.of(
        new Key(REGION_SIZE, "64m", "server: bytes of one tx region (objects in size-class slabs)"),
        new Key(SLAB_SIZE, "1m", "server: bytes of one tx slab; a slab holds one size class"),
        new Key(OBJECT_MAX, "64k", "server: the largest tx object payload, in bytes"),
        new Key(
            LOCK_LEASE,
            "2s",
            "server: a tx participant resolves a transaction whose coordinator went silent after"
                + " LOCK this long"),
        new Key(
            LEASE,
            "auto",
            "server: a tx primary serves its regions this long after a heartbeat the master"
                + " acknowledged (auto: half of server.dead.timeout)"),
        new Key(
            REPLICAS,
            "2",
            "master: copies of a new tx region (a primary and backups on distinct servers)"),
        new Key(
            LOG_SYNC,
            "interval",
            "server: fsync of each tx region copy's log: always (before the copy answers),"
                + " interval (every tx.log.interval) or none"),
        new Key(LOG_INTERVAL, "10ms", "server: how often tx logs are fsynced under interval"),
        new Key(
            LOG_CHECKPOINT,
            "64m",
            "server: a tx log is rewritten as its copy's image past this and 2x its last size"),
        new Key(
            FILL_PAUSE, "0", "server: ms of pause after each object a tx re-replication copies"),
        new Key(
            DECISIONS_KEPT,
            "65536",
            "server: recent tx decisions remembered; pinned commits beyond it are warned of"));
  }

  @Override
  public void validate(FerriteConfig cfg) {
    long region = cfg.getSize(REGION_SIZE);
    long slab = cfg.getSize(SLAB_SIZE);
    long max = cfg.getSize(OBJECT_MAX);
    if (slab < 4096 || slab % ObjectLayout.LINE != 0) {
      throw new IllegalArgumentException(
          SLAB_SIZE + ": " + slab + " (expected: a multiple of 64, >= 4096)");
    }
    if (region < slab || region > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new IllegalArgumentException(
          REGION_SIZE + ": " + region + " (expected: " + SLAB_SIZE + " to 1 GiB)");
    }
    if (max < 1 || ObjectLayout.lines((int) Math.min(max, Integer.MAX_VALUE / 2)) * 64L > slab) {
      throw new IllegalArgumentException(
          OBJECT_MAX + ": " + max + " (expected: >= 1, an object of it fits in one slab)");
    }
    if (cfg.getInt(REPLICAS) < 1 || cfg.getInt(REPLICAS) > 16) {
      throw new IllegalArgumentException(
          REPLICAS + ": " + cfg.get(REPLICAS) + " (expected: 1 to 16)");
    }
    String sync = cfg.get(LOG_SYNC);
    if (!sync.equals("always") && !sync.equals("interval") && !sync.equals("none")) {
      throw new IllegalArgumentException(
          LOG_SYNC + ": " + sync + " (expected: always, interval or none)");
    }
    if (cfg.getDuration(LOG_INTERVAL).toMillis() < 1) {
      throw new IllegalArgumentException(
          LOG_INTERVAL + ": " + cfg.get(LOG_INTERVAL) + " (expected: >= 1ms)");
    }
    if (cfg.getSize(LOG_CHECKPOINT) < 4096) {
      throw new IllegalArgumentException(
          LOG_CHECKPOINT + ": " + cfg.get(LOG_CHECKPOINT) + " (expected: >= 4k)");
    }
    if (cfg.getInt(DECISIONS_KEPT) < 16) {
      throw new IllegalArgumentException(
          DECISIONS_KEPT + ": " + cfg.get(DECISIONS_KEPT) + " (expected: >= 16)");
    }
    lease(cfg);
    if (cfg.getDuration(LOCK_LEASE).toMillis() < 1) {
      throw new IllegalArgumentException(
          LOCK_LEASE + ": " + cfg.get(LOCK_LEASE) + " (expected: >= 1ms)");
    }
  }
}
