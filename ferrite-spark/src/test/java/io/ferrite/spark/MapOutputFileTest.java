package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.spark.MapOutputFetcher.Fetched;
import io.ferrite.spark.MapOutputFetcher.MapOutput;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.spark.executor.ShuffleWriteMetrics;
import org.apache.spark.shuffle.api.ShufflePartitionWriter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The map output layout without Spark's scheduler: partitions written back to back with their index
 * by {@link MapOutputFile}, read back by range with {@link MapOutputFetcher} (several outputs in
 * flight), over a real cluster with 64 KiB blocks so ranges cross blocks.
 */
@ExtendWith(SeedExtension.class)
class MapOutputFileTest {
  private static SparkTestCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = SparkTestCluster.start();
    cluster.nodes.mkdirs("/t");
  }

  @AfterAll
  static void stop() throws Exception {
    cluster.close();
  }

  /** Writes {@code parts} (null: a partition Spark skips, as it does empty ones) to one File. */
  private static long[] write(String path, byte[][] parts) throws Exception {
    MapOutputFile out =
        new MapOutputFile(cluster.nodes, path, parts.length, "", new ShuffleWriteMetrics());
    for (int p = 0; p < parts.length; p++) {
      if (parts[p] == null) {
        continue;
      }
      ShufflePartitionWriter w = out.getPartitionWriter(p);
      try (OutputStream s = w.openStream()) {
        s.write(parts[p]);
      }
      assertEquals(parts[p].length, w.getNumBytesWritten());
    }
    return out.commitAllPartitions(new long[0]).getPartitionLengths();
  }

  private static byte[][] randomParts(Random random, int n) {
    byte[][] parts = new byte[n][];
    for (int p = 0; p < n; p++) {
      if (random.nextInt(4) == 0) {
        continue;
      }
      parts[p] = new byte[random.nextInt(150_000)];
      random.nextBytes(parts[p]);
    }
    return parts;
  }

  @Test
  void rangesOfSeveralOutputsReadBackExactly(Random random) throws Exception {
    int n = 9;
    List<byte[][]> written = new ArrayList<>();
    List<MapOutput> outputs = new ArrayList<>();
    for (int m = 0; m < 5; m++) {
      byte[][] parts = randomParts(random, n);
      String path = "/t/ranges-" + m;
      long[] lengths = write(path, parts);
      for (int p = 0; p < n; p++) {
        assertEquals(parts[p] == null ? 0 : parts[p].length, lengths[p], "length of " + p);
      }
      written.add(parts);
      outputs.add(new MapOutput(null, m, m, path));
    }
    int start = random.nextInt(n);
    int end = start + 1 + random.nextInt(n - start);
    // All partitions, one in the middle, and a random range.
    for (int[] range : new int[][] {{0, n}, {3, 4}, {start, end}}) {
      checkRange(written, outputs, n, range[0], range[1]);
    }
  }

  private static void checkRange(
      List<byte[][]> written, List<MapOutput> outputs, int n, int start, int end) throws Exception {
    MapOutputFetcher f = new MapOutputFetcher(cluster.nodes, n, start, end, 2, outputs);
    for (int m = 0; m < outputs.size(); m++) {
      assertTrue(f.hasNext());
      Fetched got = f.next();
      assertEquals(m, got.output().mapIndex(), "outputs come in order");
      ByteBuffer want = ByteBuffer.allocate(got.data().remaining());
      for (int p = start; p < end; p++) {
        byte[] part = written.get(m)[p];
        int at = (int) (got.offsets()[p - start] - got.offsets()[0]);
        assertEquals(want.position(), at, "offset of partition " + p);
        if (part != null) {
          want.put(part);
        }
      }
      assertFalse(want.hasRemaining(), "the range holds exactly partitions " + start + ".." + end);
      assertArrayEquals(
          want.array(),
          Arrays.copyOfRange(got.data().array(), 0, want.capacity()),
          "partitions " + start + ".." + end + " of output " + m);
    }
    assertFalse(f.hasNext());
  }

  @Test
  void aMissingOrShortFileIsAFetchFailureNamingIt() throws Exception {
    try (NodeWriter w = cluster.nodes.create("/t/short")) {
      w.writeSync(ByteBuffer.wrap(new byte[16]));
    }
    MapOutputFetcher f =
        new MapOutputFetcher(
            cluster.nodes,
            4,
            0,
            2,
            2,
            List.of(new MapOutput(null, 1, 1, "/t/short"), new MapOutput(null, 2, 2, "/t/absent")));
    MapOutputFetcher.FetchFailure shortOne =
        assertThrows(MapOutputFetcher.FetchFailure.class, f::next);
    assertTrue(shortOne.getMessage().contains("/t/short"), shortOne.getMessage());
    MapOutputFetcher.FetchFailure absent =
        assertThrows(MapOutputFetcher.FetchFailure.class, f::next);
    assertTrue(absent.getMessage().contains("/t/absent"), absent.getMessage());
  }

  /**
   * A missing shuffle Directory is made for the output, a missing application Directory is not:
   * that is the driver's ephemeral one, gone with the driver, and made again it would outlive it.
   */
  @Test
  void aMissingShuffleDirectoryIsMadeButNeverTheApplications() throws Exception {
    cluster.nodes.mkdir("/t/app");
    write("/t/app/shuffle-1/map-0-1", new byte[][] {{1, 2}});
    assertEquals(2 + 2 * 8, cluster.nodes.lookup("/t/app/shuffle-1/map-0-1").size());
    java.io.IOException e =
        assertThrows(
            java.io.IOException.class,
            () -> write("/t/gone/shuffle-1/map-0-1", new byte[][] {{1}}));
    assertTrue(e.getMessage().contains("/t/gone/shuffle-1/map-0-1"), e.getMessage());
    assertFalse(cluster.nodes.exists("/t/gone"));
  }

  @Test
  void anAbortedOutputLeavesNothingBehind() throws Exception {
    MapOutputFile out =
        new MapOutputFile(cluster.nodes, "/t/aborted", 2, "", new ShuffleWriteMetrics());
    try (OutputStream s = out.getPartitionWriter(0).openStream()) {
      s.write(new byte[200_000]);
    }
    out.abort(new IllegalStateException("task failed"));
    assertFalse(cluster.nodes.exists("/t/aborted"));
    // Dropped, not merely unpublished: the name is free again at once (an open, unpublished File
    // keeps its name until its writer's session ends).
    cluster.nodes.create("/t/aborted").close();
  }
}
