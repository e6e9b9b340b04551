package io.ferrite.apps.rsort;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The coordination region of a sort: one allocation in the coordinator's namespace that the
 * coordinator and every worker map (RStore §V-A, Figure 8: a global field and per-worker fields).
 * Little-endian words.
 *
 * <pre>
 * 0                   barrier: coordinator byte, then one byte per worker ({@link
 *                     io.ferrite.memory.Barrier})
 * AREA * (1 + w)      worker w's area, AREA bytes:
 *   +0    assign0 i64     written by the coordinator before it starts a phase:
 *   +8    assign1 i64       LOAD: first record, count; SORT: key range; CLEANUP: delete final_j
 *   +16   progress i64    bytes the worker has done in the current long phase
 *   +24   records i64     LOAD: input share summary; VALIDATE: final_j summary
 *   +32   checksum i64
 *   +40   unordered i64
 *   +48   firstUnordered i64
 *   +56   duplicates i64
 *   +64   firstKey 10 B, +80 lastKey 10 B
 *   +96   timings: 12 x i64 (ns), see the T_* indexes
 *   +192  error: u16 length, then up to ERROR_MAX bytes of UTF-8 (a failed worker says why)
 *   +1024 bucket table: per key range j, address i64 and records i64 of worker_w_bucket_j
 *   +2048 prepared buckets: per key range j, address i64 and capacity i64 (bytes) of the
 *         allocation of worker_w_bucket_j made in LOAD, which the readers map in PREPARE
 * </pre>
 *
 * Each field has one writer at a time: the coordinator writes assignments before it starts a phase,
 * a worker writes its results before it finishes one, and the barrier orders the two.
 */
public final class RSortLayout {
  private RSortLayout() {}

  public static final int AREA = 4096;
  static final int ASSIGN0 = 0;
  static final int ASSIGN1 = 8;
  static final int PROGRESS = 16;
  static final int SUMMARY = 24;
  static final int SUMMARY_BYTES = 96 - 24;
  static final int TIMINGS = 96;
  static final int ERROR = 192;
  static final int ERROR_MAX = 800;
  static final int TABLE = 1024;
  static final int PREPARED = 2048;

  // Timing slots, ns.
  public static final int T_LOAD = 0;

  /** Phase one: reading the share back and counting its key ranges, piece by piece. */
  public static final int T_READ_INPUT = 1;

  /** Phase one: scattering the records by key range, staged, into the bucket allocations. */
  public static final int T_SCATTER = 2;

  /** Phase two: reading the buckets of the key range and packing their keys, piece by piece. */
  public static final int T_READ_BUCKETS = 3;

  /** Phase two: {@code parallelSort} of the packed keys and tie resolution. */
  public static final int T_SORT = 4;

  /** Phase two: allocating {@code final_j}, and streaming the records to it in key order. */
  public static final int T_PERMUTE = 5;

  public static final int T_VALIDATE = 6;
  public static final int TIMING_SLOTS = 12;

  /** Bytes of the region for {@code workers} workers. */
  public static long regionBytes(int workers) {
    return (long) AREA * (1 + workers);
  }

  /** Offset of worker {@code w}'s area. */
  static long area(int w) {
    return (long) AREA * (1 + w);
  }

  static ByteBuffer le(int n) {
    return ByteBuffer.allocateDirect(n).order(ByteOrder.LITTLE_ENDIAN);
  }
}
