package io.ferrite.kv;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.kernel.proto.Wire;

/**
 * How a table is laid out: its number of shards (keys go to shards by jump consistent hashing), its
 * {@link Layout} (Pilaf's cuckoo table or FaRM's hopscotch table), the slots per shard it starts
 * with (a shard can be resized later), the size of each extent region and how many a shard may grow
 * to, the largest key and value it accepts, what the server does to make writes durable, and (for
 * the hopscotch layout) how many bytes of key plus value a slot holds inline.
 */
public record TableOptions(
    int shards,
    int slotsPerShard,
    int extentRegionBytes,
    int maxExtentRegions,
    int maxKey,
    int maxValue,
    Durability durability,
    Layout layout,
    int inlineBytes,
    int replicas) {
  /** Key plus value bytes a hopscotch slot holds inline by default: a 16 B key and a 40 B value. */
  public static final int DEFAULT_INLINE = 56;

  public static final TableOptions DEFAULTS =
      new TableOptions(
          8,
          1 << 16,
          16 << 20,
          16,
          1024,
          256 << 10,
          Durability.NONE,
          Layout.HOPSCOTCH,
          DEFAULT_INLINE,
          1);

  /** The most copies a shard may have (a primary and two backups). */
  public static final int MAX_REPLICAS = 3;

  /**
   * The shard's hash table. Both are read with one-sided reads only and written only by the shard's
   * server; both are linearizable per key.
   *
   * <ul>
   *   <li>{@code PILAF}: Pilaf's 3-way cuckoo table of 32-byte self-verifying entries pointing to
   *       key-value extents (Pilaf §3.2–3.4): a get reads 1–3 entries and one extent, ≥ 2 reads.
   *   <li>{@code HOPSCOTCH}: FaRM's chained associative hopscotch table (FaRM §3.6): buckets of 4
   *       slots protected by versions, a key always in its bucket, the next one or the bucket's
   *       overflow chain; small values inline, so a get is usually one read of two buckets.
   * </ul>
   */
  public enum Layout {
    PILAF,
    HOPSCOTCH
  }

  /**
   * What the shard's server does with each acknowledged write: {@code NONE} keeps it in DRAM only
   * (lost when the server restarts); {@code INTERVAL} appends it to the server's operation log and
   * fsyncs the log every 100 ms (a killed process loses nothing the kernel has, a power loss up to
   * 100 ms); {@code ALWAYS} fsyncs before it acknowledges. The log is replayed on restart.
   */
  public enum Durability {
    NONE,
    INTERVAL,
    ALWAYS
  }

  /** Options with one copy of each shard (no replication). */
  public TableOptions(
      int shards,
      int slotsPerShard,
      int extentRegionBytes,
      int maxExtentRegions,
      int maxKey,
      int maxValue,
      Durability durability,
      Layout layout,
      int inlineBytes) {
    this(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        durability,
        layout,
        inlineBytes,
        1);
  }

  public TableOptions {
    check("shards", shards, 1, 4096);
    check("slotsPerShard", slotsPerShard, 3, 1 << 24);
    check("extentRegionBytes", extentRegionBytes, 4096, 1 << 30);
    check("maxExtentRegions", maxExtentRegions, 1, 1024);
    check("maxKey", maxKey, 1, 1 << 16);
    check("maxValue", maxValue, 0, (1 << 30) - (1 << 16));
    check("inlineBytes", inlineBytes, HopscotchLayout.MIN_INLINE, HopscotchLayout.MAX_INLINE);
    check("replicas", replicas, 1, MAX_REPLICAS);
    java.util.Objects.requireNonNull(durability, "durability");
    java.util.Objects.requireNonNull(layout, "layout");
  }

  /**
   * Checks what the fields cannot check alone: the largest extent fits in one extent region.
   *
   * @return this
   */
  public TableOptions validate() {
    // The allocator rounds an extent up to its size class, at most 1.5x (32, 48, 64, 96, ...).
    long largest = (long) maxKey + maxValue + Extents.HEADER;
    if (largest + largest / 2 > extentRegionBytes) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "1.5 x (maxKey + maxValue + "
              + Extents.HEADER
              + "): "
              + (largest + largest / 2)
              + " B (expected: <= extentRegionBytes "
              + extentRegionBytes
              + ": the largest extent, rounded up to its size class, must fit in one region)");
    }
    regionLength(slotsPerShard);
    return this;
  }

  /**
   * Bytes of a shard's table region (entries or buckets) with {@code slots} slots in this layout.
   *
   * @throws FerriteException INVALID_ARGUMENT if that is more than a region can hold
   */
  public long regionLength(int slots) {
    long len =
        layout == Layout.PILAF
            ? PilafLayout.entryRegionLength(slots)
            : HopscotchLayout.regionLength(HopscotchLayout.bucketsFor(slots), inlineBytes);
    if (len > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "slots: "
              + slots
              + " need a "
              + len
              + " B table region (expected: <= "
              + io.ferrite.fabric.MappedRegion.MAX_LENGTH
              + " B: use more shards)");
    }
    return len;
  }

  private static void check(String name, int v, int min, int max) {
    if (v < min || v > max) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          name + ": " + v + " (expected: >= " + min + " and <= " + max + ")");
    }
  }

  public TableOptions withShards(int n) {
    return new TableOptions(
        n,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        durability,
        layout,
        inlineBytes,
        replicas);
  }

  public TableOptions withSlotsPerShard(int n) {
    return new TableOptions(
        shards,
        n,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        durability,
        layout,
        inlineBytes,
        replicas);
  }

  public TableOptions withExtents(int regionBytes, int maxRegions) {
    return new TableOptions(
        shards,
        slotsPerShard,
        regionBytes,
        maxRegions,
        maxKey,
        maxValue,
        durability,
        layout,
        inlineBytes,
        replicas);
  }

  public TableOptions withLimits(int key, int value) {
    return new TableOptions(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        key,
        value,
        durability,
        layout,
        inlineBytes,
        replicas);
  }

  public TableOptions withDurability(Durability d) {
    return new TableOptions(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        d,
        layout,
        inlineBytes,
        replicas);
  }

  public TableOptions withLayout(Layout l) {
    return new TableOptions(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        durability,
        l,
        inlineBytes,
        replicas);
  }

  /** Key plus value bytes a hopscotch slot holds inline (larger pairs go out of line). */
  public TableOptions withInlineBytes(int n) {
    return new TableOptions(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        durability,
        layout,
        n,
        replicas);
  }

  /**
   * Copies of each shard: 1 (the default) keeps one; 2 or 3 keep a primary and one or two backups
   * on other servers, every write applied at each before it is acknowledged (docs/KV.md
   * "Replication").
   */
  public TableOptions withReplicas(int n) {
    return new TableOptions(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        durability,
        layout,
        inlineBytes,
        n);
  }

  public void write(Wire.Writer w) {
    w.i32(shards)
        .i32(slotsPerShard)
        .i32(extentRegionBytes)
        .i32(maxExtentRegions)
        .i32(maxKey)
        .i32(maxValue)
        // replicas - 1 in the high nibble of the durability byte: tables and logs written before
        // replication (a 0 nibble) read as one copy.
        .u8(durability.ordinal() | (replicas - 1) << 4)
        .u8(layout.ordinal())
        .i32(inlineBytes);
  }

  public static TableOptions read(Wire.Reader r) {
    int shards = r.i32("shards");
    int slots = r.i32("slotsPerShard");
    int regionBytes = r.i32("extentRegionBytes");
    int maxRegions = r.i32("maxExtentRegions");
    int maxKey = r.i32("maxKey");
    int maxValue = r.i32("maxValue");
    int d = r.u8("durability");
    return new TableOptions(
        shards,
        slots,
        regionBytes,
        maxRegions,
        maxKey,
        maxValue,
        durability(d & 0x0f),
        layout(r.u8("layout")),
        r.i32("inlineBytes"),
        (d >>> 4) + 1);
  }

  private static Layout layout(int v) {
    if (v >= Layout.values().length) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "layout: " + v + " (expected: 0 pilaf, 1 hopscotch)");
    }
    return Layout.values()[v];
  }

  private static Durability durability(int v) {
    if (v >= Durability.values().length) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "durability: " + v + " (expected: 0 none, 1 interval, 2 always)");
    }
    return Durability.values()[v];
  }
}
