package io.ferrite.tree;

import java.util.Arrays;

/**
 * One path's latency window of a {@link PathSelector} server: the last {@code n} kept samples,
 * their sum and sum of squares, the outliers' periods and the current run of samples beyond the
 * window. Not thread-safe: used under the server's lock.
 */
final class LatencyWindow {
  final double[] ring;
  int count;
  int next;
  double sum;
  double sumSquares;
  int keptInPeriod;
  int droppedInPeriod;
  long last;

  /** The current run of samples beyond the window on one side ({@link PathSelector#SHIFT_RUN}). */
  final double[] run = new double[PathSelector.SHIFT_RUN];

  int runLength;
  int runSide;

  /** Level shifts read from runs, for tests and diagnostics. */
  long shifts;

  /** Scratch for {@link #estimate}'s median (under the server's lock). */
  private final double[] sorted;

  LatencyWindow(int n) {
    ring = new double[n];
    sorted = new double[n];
  }

  double mean() {
    return count == 0 ? 0 : sum / count;
  }

  /**
   * What the path is estimated to cost: the mean once the window is full; while it fills (a path's
   * first samples, or the first after a load shift or an idle period), the lower median. A path's
   * first searches pay its cold start (a connection set up, code not yet compiled: milliseconds
   * over tcp), and a mean of a few samples holds such a one until a hundred more push it out, nor
   * can a σ test drop it (of n samples none lies farther than (n − 1)/√n·σ from their mean: under
   * 3σ up to 10). Measured over tcp at 1 thread, one such start kept the server path's estimate at
   * 377 µs for seconds while it took 9 µs, and the selector on the client path at half the
   * throughput. A sort of at most {@code n − 1} samples, per sample while filling only.
   */
  double estimate() {
    if (count == ring.length || count == 0) {
      return mean();
    }
    // While not full, the ring holds its samples at 0 .. count - 1 (it starts at 0 when cleared).
    System.arraycopy(ring, 0, sorted, 0, count);
    Arrays.sort(sorted, 0, count);
    return sorted[(count - 1) / 2];
  }

  double sigma() {
    if (count < 2) {
      return 0;
    }
    double m = mean();
    return Math.sqrt(Math.max(0, sumSquares / count - m * m));
  }

  /**
   * Drops an outlier, or keeps the sample (evicting the oldest); restarts the window from a run of
   * {@link PathSelector#SHIFT_RUN} samples beyond it on one side; forgets a changed history. O(n)
   * for the window's range once it holds {@link PathSelector#MIN_FOR_OUTLIERS} (timed searches
   * only).
   */
  void add(double sample, long now, double k) {
    last = now;
    boolean outlier = false;
    if (count >= PathSelector.MIN_FOR_OUTLIERS) {
      double mean = mean();
      double sigma = sigma();
      outlier = sigma > 0 && Math.abs(sample - mean) >= k * sigma;
      int side = outlier ? (sample > mean ? 1 : -1) : beyond(sample);
      if (side == 0) {
        runLength = 0;
      } else {
        if (side != runSide) {
          runLength = 0;
          runSide = side;
        }
        run[runLength++] = sample;
        if (runLength == PathSelector.SHIFT_RUN) {
          // A level shift: the window restarts from the run (its lower median the estimate).
          shifts++;
          clear();
          for (double r : run) {
            keep(r);
          }
          return;
        }
      }
    }
    if (outlier) {
      droppedInPeriod++;
    } else {
      keep(sample);
    }
    if (keptInPeriod + droppedInPeriod >= ring.length) {
      boolean changed = droppedInPeriod > keptInPeriod;
      keptInPeriod = 0;
      droppedInPeriod = 0;
      if (changed) {
        clear();
      }
    }
  }

  /** 1 if {@code sample} is above every sample held, -1 if below every one, else 0. */
  private int beyond(double sample) {
    boolean above = true;
    boolean below = true;
    for (int i = 0; i < count; i++) {
      double v = ring[i];
      above &= sample > v;
      below &= sample < v;
    }
    return above ? 1 : below ? -1 : 0;
  }

  private void keep(double sample) {
    keptInPeriod++;
    if (count == ring.length) {
      double old = ring[next];
      sum -= old;
      sumSquares -= old * old;
    } else {
      count++;
    }
    ring[next] = sample;
    next = (next + 1) % ring.length;
    sum += sample;
    sumSquares += sample * sample;
  }

  /**
   * Full, and its current period has dropped few outliers (at most 1 + 1/8 of what it kept): its
   * path is then timed 1 in {@code sampling}. A load shift makes every sample an outlier, so two or
   * so of them switch back to timing every search until the window is forgotten and refilled.
   */
  boolean steady() {
    return count == ring.length && droppedInPeriod <= 1 + keptInPeriod / 8;
  }

  /** Forgets the history if its last sample is older than {@code idle}. */
  void expire(long now, long idle) {
    if (count > 0 && now - last > idle) {
      clear();
    }
  }

  void clear() {
    count = 0;
    next = 0;
    sum = 0;
    sumSquares = 0;
    keptInPeriod = 0;
    droppedInPeriod = 0;
    runLength = 0;
    runSide = 0;
  }
}
