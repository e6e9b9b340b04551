package io.ferrite.tx;

import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A tx region's placement in the master's map (FaRM §3.3: region → primary and backups): what
 * {@link TxClient#placement} answers, decoded from the master's {@code GET_REGION} and {@code
 * NEW_REGION} answers ({@code i32 region, i32 primary, i32 n, n × i32 backup, u8 opened, i64
 * epoch}) and the servers' {@code GET_PLACEMENT} answers (the same, then {@code i32 m, m × (i32
 * server, i64 since)}: the copies being filled) here only.
 *
 * @param region the region's id
 * @param primary the server clients read and commit at
 * @param backups the servers holding copies, in promotion order
 * @param opened whether the primary made the region (objects may live in it)
 * @param epoch bumped on every change of the placement (docs/TX.md, "Recovery")
 * @param filling the copies being filled, server → the epoch its fill began at (empty in a
 *     GET_REGION answer, which does not carry them)
 */
public record TxPlacement(
    int region,
    int primary,
    List<Integer> backups,
    boolean opened,
    long epoch,
    Map<Integer, Long> filling) {
  public TxPlacement {
    backups = List.copyOf(backups);
    filling = Map.copyOf(filling);
  }

  /** Decodes a master's GET_REGION or NEW_REGION answer. */
  public static TxPlacement read(ByteBuffer answer) {
    return read(answer, false);
  }

  /**
   * Decodes a master's answer: {@code withFilling} for GET_PLACEMENT's, which goes on with the
   * copies being filled.
   */
  public static TxPlacement read(ByteBuffer answer, boolean withFilling) {
    Wire.Reader r = new Wire.Reader(answer.duplicate(), "tx region placement");
    int region = r.i32("region");
    int primary = r.i32("primary");
    int n = r.count("backups", 64);
    List<Integer> backups = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      backups.add(r.i32("backup"));
    }
    boolean opened = r.u8("opened") != 0;
    long epoch = r.i64("epoch");
    Map<Integer, Long> filling = new LinkedHashMap<>();
    if (withFilling) {
      int m = r.count("filling", 64);
      for (int i = 0; i < m; i++) {
        filling.put(r.i32("server"), r.i64("since"));
      }
    }
    r.end();
    return new TxPlacement(region, primary, backups, opened, epoch, filling);
  }
}
