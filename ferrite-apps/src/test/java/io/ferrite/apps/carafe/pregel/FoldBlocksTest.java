package io.ferrite.apps.carafe.pregel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The cache-blocked fold of a partition's combined sends ({@link FoldBlocks}): the blocks hold
 * every edge once, in the partition's order, within one target block that never straddles a
 * partition; and what a partition emits with blocks of 1, 3 or 17 ids, or the real 2^16, is what a
 * direct per-edge fold of the same sends gives (sums within 1e-12, the same bits when every vertex
 * sends along all its edges; minima and the set of targets exact), whether every vertex sends, half
 * of them (blocked fold, targets marked) or a few (per-sender fold).
 */
@ExtendWith(SeedExtension.class)
class FoldBlocksTest {
  private static final int[] BLOCKS = {1, 3, 17, FoldBlocks.BLOCK};

  /** A random partition: graph of n vertices cut in W ranges; this is partition me's adjacency. */
  private record Shape(long[] bounds, int me, long n, int[] off, int[] targets) {
    int size() {
      return off.length - 1;
    }

    int[] intBounds() {
      return Arrays.stream(bounds).mapToInt(b -> (int) b).toArray();
    }
  }

  private static Shape shape(Random r) {
    int n = 1 + r.nextInt(300);
    int workers = 1 + r.nextInt(4);
    long[] bounds = new long[workers + 1];
    bounds[workers] = n;
    for (int j = 1; j < workers; j++) {
      bounds[j] = r.nextInt(n + 1);
    }
    Arrays.sort(bounds, 1, workers);
    int me = r.nextInt(workers);
    int size = (int) (bounds[me + 1] - bounds[me]);
    int[] off = new int[size + 1];
    List<Integer> t = new ArrayList<>();
    for (int v = 0; v < size; v++) {
      // Some without edges, some hubs; self-loops and duplicates come with the random draws.
      int degree = r.nextInt(5) == 0 ? 0 : r.nextInt(10) == 0 ? r.nextInt(60) : 1 + r.nextInt(6);
      for (int k = 0; k < degree; k++) {
        t.add(r.nextInt(4) == 0 ? (int) bounds[me] + v : r.nextInt(n));
      }
      off[v + 1] = t.size();
    }
    return new Shape(bounds, me, n, off, t.stream().mapToInt(Integer::intValue).toArray());
  }

  @Test
  void blocksHoldEveryEdgeOnceInThePartitionsOrder(Random random) {
    for (int round = 0; round < 200; round++) {
      Shape s = shape(random);
      int block = BLOCKS[random.nextInt(BLOCKS.length)];
      int[] bounds = s.intBounds();
      FoldBlocks f = new FoldBlocks(bounds, s.off(), s.targets(), s.size(), block);
      int blocks = f.blockFirst.length - 1;
      assertEquals(0, f.firstBlock[0]);
      assertEquals(blocks, f.firstBlock[bounds.length - 1]);
      assertEquals(s.n(), f.blockFirst[blocks]);
      for (int j = 0; j + 1 < bounds.length; j++) {
        for (int b = f.firstBlock[j]; b < f.firstBlock[j + 1]; b++) {
          // Inside partition j, at most `block` ids, and the next block starts where this ends.
          assertTrue(f.blockFirst[b] >= bounds[j] && f.blockFirst[b + 1] <= bounds[j + 1]);
          assertTrue(f.blockFirst[b + 1] - f.blockFirst[b] <= block);
          assertTrue(f.blockFirst[b + 1] > f.blockFirst[b]);
        }
      }
      assertEquals(s.targets().length, f.start[blocks]);
      // Each block: the partition's edges into it, in the partition's order.
      for (int b = 0; b < blocks; b++) {
        List<Long> want = new ArrayList<>();
        for (int v = 0; v < s.size(); v++) {
          for (int e = s.off()[v]; e < s.off()[v + 1]; e++) {
            int t = s.targets()[e];
            if (t >= f.blockFirst[b] && t < f.blockFirst[b + 1]) {
              want.add(((long) v << 32) | t);
            }
          }
        }
        List<Long> got = new ArrayList<>();
        for (int k = f.start[b]; k < f.start[b + 1]; k++) {
          got.add(((long) f.source[k] << 32) | (f.blockFirst[b] + f.target[k]));
        }
        assertEquals(want, got, "block " + b + " of " + blocks + ", " + block + " ids a block");
      }
      int[] perVertex = new int[s.size()];
      for (int k = 0; k < f.start[blocks]; k++) {
        perVertex[f.source[k]]++;
      }
      for (int v = 0; v < s.size(); v++) {
        assertEquals(s.off()[v + 1] - s.off()[v], perVertex[v]);
      }
    }
    assertThrows(
        IllegalArgumentException.class,
        () -> new FoldBlocks(new int[] {0, 1}, new int[1], new int[0], 0, 0));
    assertThrows(
        IllegalArgumentException.class,
        () -> new FoldBlocks(new int[] {0, 1}, new int[1], new int[0], 0, FoldBlocks.BLOCK + 1));
  }

  @Test
  void eachBlockListsTheDistinctTargetsItsEdgesReachInOrder(Random random) {
    for (int round = 0; round < 200; round++) {
      Shape s = shape(random);
      int block = BLOCKS[random.nextInt(BLOCKS.length)];
      int[] bounds = s.intBounds();
      FoldBlocks f = new FoldBlocks(bounds, s.off(), s.targets(), s.size(), block);
      int blocks = f.blockFirst.length - 1;
      java.util.TreeSet<Integer> distinct = new java.util.TreeSet<>();
      for (int t : s.targets()) {
        distinct.add(t);
      }
      assertEquals(0, f.reachStart[0]);
      assertEquals(distinct.size(), f.reachStart[blocks]);
      assertEquals(distinct.size(), f.reached.length);
      List<Integer> listed = new ArrayList<>();
      for (int b = 0; b < blocks; b++) {
        for (int i = f.reachStart[b]; i < f.reachStart[b + 1]; i++) {
          int t = f.blockFirst[b] + f.reached[i];
          assertTrue(t < f.blockFirst[b + 1], "block " + b + " lists " + t + " beyond its end");
          listed.add(t);
        }
      }
      // Every distinct target once, ascending (blocks ascend, and so do their lists).
      assertEquals(new ArrayList<>(distinct), listed, "round " + round + ", block " + block);
      for (int j = 0; j + 1 < bounds.length; j++) {
        int lo = bounds[j];
        int hi = bounds[j + 1];
        assertEquals(
            distinct.subSet(lo, hi).size(), f.reachedIn(j), "partition " + j + ", round " + round);
      }
    }
  }

  @Test
  void aBlockedFoldEmitsWhatADirectFoldGives(Random random) {
    for (int round = 0; round < 300; round++) {
      Shape s = shape(random);
      boolean sum = random.nextBoolean();
      double fraction = new double[] {1, 0.5, 0.05}[random.nextInt(3)];
      boolean edgeSends = random.nextInt(3) == 0;
      Plan plan = Plan.random(random, s, fraction, edgeSends, sum);
      ByteBuffer[] expected = plan.direct(s, sum);
      ByteBuffer[] first = null;
      for (int block : BLOCKS) {
        Partition p =
            new Partition(
                s.me(),
                s.bounds(),
                s.n(),
                s.off(),
                s.targets(),
                null,
                plan.program(sum),
                new FoldBlocks(s.intBounds(), s.off(), s.targets(), s.size(), block));
        p.compute(0, 0);
        p.emit();
        String what = "round " + round + ", block " + block + ", sum " + sum + ", " + fraction;
        for (int j = 0; j < expected.length; j++) {
          ByteBuffer got = p.out[j].slice(0, p.outBytes(j)).order(p.out[j].order());
          assertContainer(expected[j], got, sum, what + ", container " + j);
        }
        if (fraction == 1 && !edgeSends) {
          // Every sender's whole adjacency: the order of additions per target is the partition's.
          ByteBuffer[] bytes = new ByteBuffer[expected.length];
          for (int j = 0; j < bytes.length; j++) {
            bytes[j] = p.out[j].slice(0, p.outBytes(j));
          }
          if (first == null) {
            first = bytes;
          } else {
            for (int j = 0; j < bytes.length; j++) {
              assertEquals(first[j], bytes[j], what + ": the same bits whatever the block");
            }
          }
        }
      }
    }
  }

  private static void assertContainer(ByteBuffer want, ByteBuffer got, boolean sum, String what) {
    assertEquals(want.getLong(0), got.getLong(0), what + ": messages");
    int count = (int) want.getLong(0);
    int[] wantTargets = new int[count];
    int[] gotTargets = new int[count];
    for (int i = 0; i < count; i++) {
      int at = Mailbox.COUNT + i * Mailbox.MESSAGE;
      wantTargets[i] = want.getInt(at);
      gotTargets[i] = got.getInt(at);
      if (sum) {
        double w = Double.longBitsToDouble(want.getLong(at + 4));
        double g = Double.longBitsToDouble(got.getLong(at + 4));
        assertEquals(w, g, 1e-12 * Math.abs(w), what + ": message " + i);
      } else {
        assertEquals(want.getLong(at + 4), got.getLong(at + 4), what + ": message " + i);
      }
    }
    assertArrayEquals(wantTargets, gotTargets, what + ": targets");
  }

  /**
   * What each vertex sends in superstep 0: along all its edges (0, 1 or 2 payloads) and along
   * single edges.
   */
  private record Plan(long[][] all, int[][] edges, long[][] edgePayloads) {
    static Plan random(Random r, Shape s, double fraction, boolean edgeSends, boolean sum) {
      int size = s.size();
      long[][] all = new long[size][];
      int[][] edges = new int[size][];
      long[][] edgePayloads = new long[size][];
      for (int v = 0; v < size; v++) {
        all[v] = new long[0];
        edges[v] = new int[0];
        edgePayloads[v] = new long[0];
        if (r.nextDouble() < fraction) {
          all[v] = new long[r.nextInt(8) == 0 ? 2 : 1];
          for (int i = 0; i < all[v].length; i++) {
            all[v][i] = payload(r, sum);
          }
        }
        int degree = s.off()[v + 1] - s.off()[v];
        if (edgeSends && degree > 0 && r.nextInt(4) == 0) {
          edges[v] = new int[] {r.nextInt(degree)};
          edgePayloads[v] = new long[] {payload(r, sum)};
        }
      }
      return new Plan(all, edges, edgePayloads);
    }

    private static long payload(Random r, boolean sum) {
      return sum ? Double.doubleToRawLongBits(r.nextDouble()) : r.nextLong() >>> 1;
    }

    VertexProgram program(boolean sum) {
      return new VertexProgram() {
        @Override
        public Combiner combiner() {
          return sum ? Combiner.SUM_DOUBLE : Combiner.MIN_LONG;
        }

        @Override
        public void init(Vertex v) {}

        @Override
        public void compute(Context ctx, Vertex v, Messages messages) {
          int local = v.local;
          for (long x : all[local]) {
            ctx.sendToAllNeighbors(x);
          }
          for (int i = 0; i < edges[local].length; i++) {
            ctx.send(edges[local][i], edgePayloads[local][i]);
          }
        }

        @Override
        public String spec() {
          return "plan";
        }
      };
    }

    /** The containers a direct fold gives: every payload folded edge by edge into its target. */
    ByteBuffer[] direct(Shape s, boolean sum) {
      int n = (int) s.n();
      double[] sums = new double[n];
      long[] mins = new long[n];
      Arrays.fill(mins, Long.MAX_VALUE);
      boolean[] has = new boolean[n];
      for (int v = 0; v < s.size(); v++) {
        for (int i = 0; i < edges[v].length; i++) {
          int t = s.targets()[s.off()[v] + edges[v][i]];
          fold(sums, mins, has, t, edgePayloads[v][i], sum);
        }
      }
      for (int v = 0; v < s.size(); v++) {
        for (long x : all[v]) {
          for (int e = s.off()[v]; e < s.off()[v + 1]; e++) {
            fold(sums, mins, has, s.targets()[e], x, sum);
          }
        }
      }
      int workers = s.bounds().length - 1;
      ByteBuffer[] out = new ByteBuffer[workers];
      for (int j = 0; j < workers; j++) {
        int base = (int) s.bounds()[j];
        int end = (int) s.bounds()[j + 1];
        out[j] =
            io.ferrite.apps.carafe.GraphLayout.le(Mailbox.COUNT + Mailbox.MESSAGE * (end - base));
        int count = 0;
        for (int t = base; t < end; t++) {
          if (has[t]) {
            int at = Mailbox.COUNT + count++ * Mailbox.MESSAGE;
            out[j]
                .putInt(at, t - base)
                .putLong(at + 4, sum ? Double.doubleToRawLongBits(sums[t]) : mins[t]);
          }
        }
        out[j].putLong(0, count);
      }
      return out;
    }

    private static void fold(
        double[] sums, long[] mins, boolean[] has, int t, long payload, boolean sum) {
      has[t] = true;
      if (sum) {
        sums[t] += Double.longBitsToDouble(payload);
      } else {
        mins[t] = Math.min(mins[t], payload);
      }
    }
  }
}
