package io.ferrite.kv;

import io.ferrite.kernel.proto.Wire;

/**
 * A shard's counts, as its server reports them. {@code moves} counts displacements (cuckoo moves
 * for Pilaf, hopscotch moves for the hopscotch layout); {@code overflowKeys} and {@code
 * overflowBlocks} are the keys in overflow chains and the blocks holding them (hopscotch only);
 * {@code regions} and {@code regionBytes} are the server regions the shard holds now (its table
 * array and its extent regions: a resize frees the replaced array's region).
 */
public record ShardStats(
    int slots,
    int count,
    long extentBytesUsed,
    long extentBytesFree,
    int extentRegions,
    long moves,
    long puts,
    long fullErrors,
    long epoch,
    int overflowKeys,
    int overflowBlocks,
    int regions,
    long regionBytes) {
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
        .i64(epoch)
        .i32(overflowKeys)
        .i32(overflowBlocks)
        .i32(regions)
        .i64(regionBytes);
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
        r.i64("epoch"),
        r.i32("overflowKeys"),
        r.i32("overflowBlocks"),
        r.i32("regions"),
        r.i64("regionBytes"));
  }
}
