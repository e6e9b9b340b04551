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
    int maxValue) {
  public static final TableOptions DEFAULTS =
      new TableOptions(8, 1 << 16, 16 << 20, 16, 1024, 256 << 10);

  public TableOptions {
    check("shards", shards, 1, 4096);
    check("slotsPerShard", slotsPerShard, 3, 1 << 24);
    check("extentRegionBytes", extentRegionBytes, 4096, 1 << 30);
    check("maxExtentRegions", maxExtentRegions, 1, 1024);
    check("maxKey", maxKey, 1, 1 << 16);
    check("maxValue", maxValue, 0, (1 << 30) - (1 << 16));
  }

  /**
   * Checks what the fields cannot check alone: the largest extent fits in one extent region.
   *
   * @return this
   */
  public TableOptions validate() {
    if ((long) maxKey + maxValue + PilafLayout.EXTENT_HEADER > extentRegionBytes) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "maxKey + maxValue + 8: "
              + ((long) maxKey + maxValue + 8)
              + " B (expected: <= extentRegionBytes "
              + extentRegionBytes
              + ")");
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
        n, slotsPerShard, extentRegionBytes, maxExtentRegions, maxKey, maxValue);
  }

  public TableOptions withSlotsPerShard(int n) {
    return new TableOptions(shards, n, extentRegionBytes, maxExtentRegions, maxKey, maxValue);
  }

  public TableOptions withExtents(int regionBytes, int maxRegions) {
    return new TableOptions(shards, slotsPerShard, regionBytes, maxRegions, maxKey, maxValue);
  }

  public TableOptions withLimits(int key, int value) {
    return new TableOptions(shards, slotsPerShard, extentRegionBytes, maxExtentRegions, key, value);
  }

  public void write(Wire.Writer w) {
    w.i32(shards)
        .i32(slotsPerShard)
        .i32(extentRegionBytes)
        .i32(maxExtentRegions)
        .i32(maxKey)
        .i32(maxValue);
  }

  public static TableOptions read(Wire.Reader r) {
    return new TableOptions(
        r.i32("shards"),
        r.i32("slotsPerShard"),
        r.i32("extentRegionBytes"),
        r.i32("maxExtentRegions"),
        r.i32("maxKey"),
        r.i32("maxValue"));
  }
}
