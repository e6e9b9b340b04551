package io.ferrite.kv;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;

/**
 * How a table is laid out: its number of shards (keys go to shards by jump consistent hashing), the
 * cuckoo slots per shard, the size of each extent region and how many a shard may grow to, and the
 * largest key and value it accepts.
 */
public record TableOptions(
    int shards,
    int slotsPerShard,
    int extentRegionBytes,
    int maxExtentRegions,
    int maxKey,
    int maxValue,
    Durability durability) {
  public static final TableOptions DEFAULTS =
      new TableOptions(8, 1 << 16, 16 << 20, 16, 1024, 256 << 10, Durability.NONE);

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

  /** Options with no operation log. */
  public TableOptions(
      int shards,
      int slotsPerShard,
      int extentRegionBytes,
      int maxExtentRegions,
      int maxKey,
      int maxValue) {
    this(
        shards,
        slotsPerShard,
        extentRegionBytes,
        maxExtentRegions,
        maxKey,
        maxValue,
        Durability.NONE);
  }

  public TableOptions {
    check("shards", shards, 1, 4096);
    check("slotsPerShard", slotsPerShard, 3, 1 << 24);
    check("extentRegionBytes", extentRegionBytes, 4096, 1 << 30);
    check("maxExtentRegions", maxExtentRegions, 1, 1024);
    check("maxKey", maxKey, 1, 1 << 16);
    check("maxValue", maxValue, 0, (1 << 30) - (1 << 16));
    java.util.Objects.requireNonNull(durability, "durability");
  }

  /**
   * Checks what the fields cannot check alone: the largest extent fits in one extent region.
   *
   * @return this
   */
  public TableOptions validate() {
    // The allocator rounds an extent up to its size class, at most 1.5x (32, 48, 64, 96, ...).
    long largest = (long) maxKey + maxValue + PilafLayout.EXTENT_HEADER;
    if (largest + largest / 2 > extentRegionBytes) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "1.5 x (maxKey + maxValue + 8): "
              + (largest + largest / 2)
              + " B (expected: <= extentRegionBytes "
              + extentRegionBytes
              + ": the largest extent, rounded up to its size class, must fit in one region)");
    }
    return this;
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
        n, slotsPerShard, extentRegionBytes, maxExtentRegions, maxKey, maxValue, durability);
  }

  public TableOptions withSlotsPerShard(int n) {
    return new TableOptions(
        shards, n, extentRegionBytes, maxExtentRegions, maxKey, maxValue, durability);
  }

  public TableOptions withExtents(int regionBytes, int maxRegions) {
    return new TableOptions(
        shards, slotsPerShard, regionBytes, maxRegions, maxKey, maxValue, durability);
  }

  public TableOptions withLimits(int key, int value) {
    return new TableOptions(
        shards, slotsPerShard, extentRegionBytes, maxExtentRegions, key, value, durability);
  }

  public TableOptions withDurability(Durability d) {
    return new TableOptions(
        shards, slotsPerShard, extentRegionBytes, maxExtentRegions, maxKey, maxValue, d);
  }

  public void write(Wire.Writer w) {
    w.i32(shards)
        .i32(slotsPerShard)
        .i32(extentRegionBytes)
        .i32(maxExtentRegions)
        .i32(maxKey)
        .i32(maxValue)
        .u8(durability.ordinal());
  }

  public static TableOptions read(Wire.Reader r) {
    return new TableOptions(
        r.i32("shards"),
        r.i32("slotsPerShard"),
        r.i32("extentRegionBytes"),
        r.i32("maxExtentRegions"),
        r.i32("maxKey"),
        r.i32("maxValue"),
        durability(r.u8("durability")));
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
