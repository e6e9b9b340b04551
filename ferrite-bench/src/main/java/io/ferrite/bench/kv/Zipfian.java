package io.ferrite.bench.kv;

import java.util.Random;

/**
 * YCSB's scrambled zipfian key chooser (Gray et al., "Quickly generating billion-record synthetic
 * databases", constant 0.99): rank r is drawn zipfian, then hashed to an item so that the hot items
 * are spread over the key space (and over shards and slots). Immutable; the caller brings the
 * {@link Random}.
 */
final class Zipfian {
  static final double THETA = 0.99;

  private final int items;
  private final double alpha;
  private final double zetan;
  private final double eta;

  Zipfian(int items) {
    this.items = items;
    double zeta2 = 1 + Math.pow(0.5, THETA);
    double z = 0;
    for (int i = 1; i <= items; i++) {
      z += 1 / Math.pow(i, THETA);
    }
    this.zetan = z;
    this.alpha = 1 / (1 - THETA);
    this.eta = (1 - Math.pow(2.0 / items, 1 - THETA)) / (1 - zeta2 / zetan);
  }

  /** The next item in [0, items). */
  int next(Random r) {
    double u = r.nextDouble();
    double uz = u * zetan;
    long rank;
    if (uz < 1) {
      rank = 0;
    } else if (uz < 1 + Math.pow(0.5, THETA)) {
      rank = 1;
    } else {
      rank = (long) (items * Math.pow(eta * u - eta + 1, alpha));
    }
    long h = rank * 0x9E3779B97F4A7C15L;
    h ^= h >>> 32;
    return (int) Long.remainderUnsigned(h, items);
  }
}
