package io.ferrite.bench.ceiling;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.bench.Workload;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The ceiling of a shm one-sided read: an in-JVM copy from one direct buffer to another, the very
 * copy a shm read performs ({@code UnsafeBuffer.getBytes} into a direct destination, as {@code
 * MappedRegion.readInto} does), at the same sizes and over the same offsets ({@link Workload}).
 * Nothing a fabric does on the same host can be faster than this.
 *
 * <p>Results: {@code ceiling.memcpy.<size>.{p50,p99,p99.9}} (ns per copy, timed one at a time like
 * every latency) and {@code ceiling.memcpy.<size>.bandwidth} (MiB/s of back-to-back copies).
 */
public final class MemcpyCeiling {
  public static final String PREFIX = "ceiling.memcpy.";

  private MemcpyCeiling() {}

  /** The result-name prefix of the copy of {@code size} bytes, e.g. {@code ceiling.memcpy.8B}. */
  public static String name(int size) {
    return PREFIX + Sizes.label(size);
  }

  public static void measure(
      BenchReport report,
      Measure.Plan plan,
      Workload workload,
      int[] latencySizes,
      int bandwidthSize,
      Progress progress)
      throws Exception {
    UnsafeBuffer src = new UnsafeBuffer(ByteBuffer.allocateDirect((int) workload.window()));
    for (int i = 0; i < src.capacity(); i += 8) {
      src.putLong(i, i * 0x9E3779B97F4A7C15L);
    }
    for (int size : latencySizes) {
      progress.step(name(size) + " latency");
      ByteBuffer dst = ByteBuffer.allocateDirect(size);
      Measure.addLatency(
          report,
          name(size),
          Measure.latency(plan, i -> src.getBytes((int) workload.offset(i, size), dst, 0, size)),
          null);
    }
    progress.step(name(bandwidthSize) + " bandwidth");
    ByteBuffer dst = ByteBuffer.allocateDirect(bandwidthSize);
    double mibs =
        Measure.bandwidth(
            plan,
            deadline -> {
              long bytes = 0;
              long i = 0;
              while (System.nanoTime() < deadline) {
                src.getBytes((int) workload.offset(i++, bandwidthSize), dst, 0, bandwidthSize);
                bytes += bandwidthSize;
              }
              return bytes;
            });
    report.add(
        BenchResult.of(
            name(bandwidthSize) + ".bandwidth", mibs, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
  }

  /**
   * The result name of {@link #measureStreamHeap}, e.g. {@code ceiling.memcpy.stream.1MiB.heap}.
   */
  public static String streamHeap(int bufferSize) {
    return PREFIX + "stream." + Sizes.label(bufferSize) + ".heap.bandwidth";
  }

  /**
   * The ceiling of reading a large shm object through an application array: {@code sourceBytes} of
   * a direct source read front to back, {@code bufferSize} at a time, into one {@code byte[]} of
   * {@code bufferSize} (the copy a shm File read through an {@code InputStream} performs, and
   * nothing else), repeated for the plan's duration. Unlike {@link #measure}'s copies from a 16 MiB
   * window, which the last-level cache holds, a source the size of the object comes from memory, as
   * the object's bytes do. Result: {@link #streamHeap}, MiB/s.
   */
  public static void measureStreamHeap(
      BenchReport report, Measure.Plan plan, long sourceBytes, int bufferSize, Progress progress)
      throws Exception {
    progress.step(streamHeap(bufferSize));
    // At most 1 GiB (a direct buffer's int capacity), a whole number of application buffers.
    int n = (int) (Math.min(sourceBytes, 1L << 30) / bufferSize * bufferSize);
    UnsafeBuffer src = new UnsafeBuffer(ByteBuffer.allocateDirect(n));
    for (int i = 0; i < n; i += 4096) {
      src.putLong(i, i * 0x9E3779B97F4A7C15L); // touch every page: no first-use faults when timed
    }
    byte[] dst = new byte[bufferSize];
    double mibs =
        Measure.bandwidth(
            plan,
            deadline -> {
              long bytes = 0;
              int off = 0;
              while (System.nanoTime() < deadline) {
                src.getBytes(off, dst, 0, bufferSize);
                bytes += bufferSize;
                off += bufferSize;
                if (off == n) {
                  off = 0;
                }
              }
              return bytes;
            });
    report.add(BenchResult.of(streamHeap(bufferSize), mibs, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
  }
}
