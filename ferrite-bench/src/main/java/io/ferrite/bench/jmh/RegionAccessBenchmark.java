package io.ferrite.bench.jmh;

import io.ferrite.bench.fabric.FabricBench;
import io.ferrite.fabric.MappedRegion;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The primitives under every shm one-sided op, against the plain copy they are built on: {@link
 * MappedRegion#readInto} and {@link MappedRegion#writeFrom} of a file mapped from {@code /dev/shm}
 * versus an {@link UnsafeBuffer} copy between two anonymous direct buffers, and the region's
 * atomics ({@code compareAndSwap}, {@code fetchAndAdd}, acquire/release words).
 *
 * <p>Run (after {@code bin/ferrite} has built the distribution once):
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" org.openjdk.jmh.Main RegionAccessBenchmark
 * java -cp "ferrite-cli/target/lib/*" org.openjdk.jmh.Main RegionAccessBenchmark -p size=8 -f 1 -wi 2 -i 3
 * </pre>
 *
 * A read of a mapped region should cost the same as the plain copy (both are {@code
 * Unsafe.copyMemory}); a gap would be the region's bounds or closed checks, or page faults.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RegionAccessBenchmark {
  private static final int REGION_BYTES = 4 << 20;

  @Param({"8", "1024", "65536"})
  public int size;

  private Path dir;
  private MappedRegion region;
  private UnsafeBuffer plainSource;
  private ByteBuffer dst;
  private ByteBuffer src;
  private long casExpect;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory(FabricBench.defaultDirectory(), "ferrite-jmh-");
    region = MappedRegion.create(dir.resolve("region"), 1, REGION_BYTES, 0x5EED);
    io.ferrite.fabric.BlockKeys keys =
        io.ferrite.fabric.BlockKeys.create(
            io.ferrite.fabric.BlockKeys.fileFor(region.file()), 1 << 20, REGION_BYTES >> 20);
    region.attachBlockKeys(keys);
    keys.set(0, BLOCK_KEY);
    plainSource = new UnsafeBuffer(ByteBuffer.allocateDirect(REGION_BYTES));
    for (int i = 0; i < REGION_BYTES; i += 8) {
      region.buffer().putLong(i, i);
      plainSource.putLong(i, i);
    }
    dst = ByteBuffer.allocateDirect(size);
    src = ByteBuffer.allocateDirect(size);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    region.closeAndDelete();
    Files.deleteIfExists(dir);
  }

  /** What a shm one-sided read does after its checks: copy out of the mapped file. */
  @Benchmark
  public ByteBuffer regionRead() {
    region.readInto(64, dst);
    return dst;
  }

  /** The ceiling: the same copy between two anonymous direct buffers. */
  @Benchmark
  public ByteBuffer plainDirectCopy() {
    plainSource.getBytes(64, dst, 0, size);
    return dst;
  }

  @Benchmark
  public MappedRegion regionWrite() {
    region.writeFrom(64, src);
    return region;
  }

  /** A block's key in the region's block key table (set up with the region). */
  private static final long BLOCK_KEY = 0xB10C;

  /**
   * The check with a block's key (a table lookup: a shift and an acquire load), beside {@link
   * #regionCheck} with the owner key (compares only).
   */
  @Benchmark
  public Object regionCheckBlockKey() {
    return region.check(BLOCK_KEY, 64, size, io.ferrite.fabric.Access.READ);
  }

  /** The full check a one-sided op runs before touching memory (the owner key). */
  @Benchmark
  public Object regionCheck() {
    return region.check(0x5EED, 64, size, io.ferrite.fabric.Access.READ);
  }

  /** A successful compare-and-swap: the word alternates between two values. */
  @Benchmark
  public long regionCompareAndSwap() {
    long prev = region.compareAndSwap(0, casExpect, casExpect + 1);
    casExpect = prev == casExpect ? casExpect + 1 : prev;
    return prev;
  }

  @Benchmark
  public long regionFetchAndAdd() {
    return region.fetchAndAdd(8, 1);
  }

  @Benchmark
  public long regionGetLongAcquire() {
    return region.getLongAcquire(16);
  }

  @Benchmark
  public void regionPutLongRelease() {
    region.putLongRelease(24, size);
  }
}
