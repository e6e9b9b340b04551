package io.ferrite.apps.carafe.pregel;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * The shared mailbox of Carafe (RStore §V-B, Figure 9): a W x W grid of segments in one allocation
 * of the job's mailbox namespace. Segment (i, j) carries the messages partition i sends to
 * partition j; it has an even and an odd container, each sized for the messages i can send j in a
 * superstep (one per edge from i to j; with a combiner, one per distinct target). In superstep k
 * worker j reads its inbox column's containers of parity k % 2 and writes its outbox row's
 * containers of parity (k + 1) % 2: each container has one writer and one reader, and the barrier
 * between supersteps orders the write before the read, so no other synchronization is needed.
 *
 * <pre>
 * container (i, j, p), at {@link #container}:
 *   +0            count i64: messages in it (written together with them, in one write)
 *   +8 + 12 * m   message m: target i32 (index inside partition j), payload i64
 * containers in row-major order of (i, j), even before odd, each rounded up to 8 bytes
 * </pre>
 *
 * Immutable; computed by the coordinator and by every worker from the same capacities.
 */
public final class Mailbox {
  /** Bytes of one message: i32 target + i64 payload. */
  public static final int MESSAGE = 12;

  /** Bytes of a container's count word. */
  public static final int COUNT = 8;

  private final int workers;
  private final long[] capacity;
  private final long[] offset;
  private final long bytes;

  /**
   * @param workers W
   * @param capacity W x W message capacities, row-major: {@code capacity[i * W + j]} for (i, j)
   */
  public Mailbox(int workers, long[] capacity) {
    if (capacity.length != workers * workers) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "mailbox capacities: " + capacity.length + " (expected: " + workers * workers + ")");
    }
    this.workers = workers;
    this.capacity = capacity.clone();
    this.offset = new long[workers * workers];
    long at = 0;
    for (int s = 0; s < capacity.length; s++) {
      if (capacity[s] < 0) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "mailbox capacity " + s + ": " + capacity[s]);
      }
      offset[s] = at;
      at += 2 * containerBytes(capacity[s]);
    }
    this.bytes = Math.max(COUNT, at);
  }

  /** Bytes of a container of {@code capacity} messages, rounded up to 8. */
  static long containerBytes(long capacity) {
    return (COUNT + MESSAGE * capacity + 7) & ~7L;
  }

  public int workers() {
    return workers;
  }

  /** Messages a container of segment (from, to) holds. */
  public long capacity(int from, int to) {
    return capacity[from * workers + to];
  }

  /** Byte offset of the container of parity {@code parity} (0 or 1) of segment (from, to). */
  public long container(int from, int to, int parity) {
    int s = from * workers + to;
    return offset[s] + (parity & 1) * containerBytes(capacity[s]);
  }

  /** Bytes of the whole grid (at least one word). */
  public long bytes() {
    return bytes;
  }
}
