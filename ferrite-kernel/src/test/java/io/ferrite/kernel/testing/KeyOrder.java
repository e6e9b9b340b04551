package io.ferrite.kernel.testing;

import java.util.ArrayList;
import java.util.List;

/** A key's inferred version order, its readers, and the unordered appends after it. */
final class KeyOrder {
  final long key;
  // writers[p]: the node that wrote the key's p-th version (-1: aborted or nobody: no edges).
  int[] writers = new int[0];
  long[] labels = new long[0];
  int[] tail = new int[0];
  final List<long[]> reads = new ArrayList<>(); // {reader node, position; -1 = initial}

  KeyOrder(long key) {
    this.key = key;
  }
}
