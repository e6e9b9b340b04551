package io.ferrite.kv;

import io.ferrite.kernel.proto.Wire;

/** A shard's counts, as its server reports them. */
public record ShardStats(
    int slots,
    int count,
    long extentBytesUsed,
    long extentBytesFree,
    int extentRegions,
    long moves,
    long puts,
    long fullErrors,
    long epoch) {
  public double occupancy() {
    return slots == 0 ? 0 : (double) count / slots;
  }

  public void write(Wire.Writer w) {
    w.i32(slots)
        .i32(count)
        .i64(extentBytesUsed)
        .i64(extentBytesFree)
        .i32(extentRegions)
        .i64(moves)
        .i64(puts)
        .i64(fullErrors)
        .i64(epoch);
  }

  public static ShardStats read(Wire.Reader r) {
    return new ShardStats(
        r.i32("slots"),
        r.i32("count"),
        r.i64("extentBytesUsed"),
        r.i64("extentBytesFree"),
        r.i32("extentRegions"),
        r.i64("moves"),
        r.i64("puts"),
        r.i64("fullErrors"),
        r.i64("epoch"));
  }
}
