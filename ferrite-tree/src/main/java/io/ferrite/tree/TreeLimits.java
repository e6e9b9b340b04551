package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * The argument checks at the tree face's public edge: what a key, a value and a scan may be. Each
 * failure is {@link ErrorCode#INVALID_ARGUMENT} (not retryable) and names the limit it broke.
 */
public final class TreeLimits {
  private final int maxKey;
  private final int maxValue;

  /**
   * Limits for {@code nodeSize}-byte nodes: a key is at most an eighth of a node less its entry
   * overhead, so that a node holding its two boundary keys always fits at least four entries and a
   * split leaves each half non-empty; a value at most {@code maxValue} bytes (the extent region).
   */
  public TreeLimits(int nodeSize, int maxValue) {
    this.maxKey = nodeSize / 8 - Node.LEAF_ENTRY;
    this.maxValue = maxValue;
  }

  public int maxKey() {
    return maxKey;
  }

  public int maxValue() {
    return maxValue;
  }

  /** Checks a key: not null, not empty, at most {@link #maxKey} bytes. */
  public byte[] key(byte[] key) {
    if (key == null || key.length == 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "key: empty (expected: 1 to " + maxKey + " bytes)");
    }
    if (key.length > maxKey) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "key: "
              + key.length
              + " bytes (expected: 1 to "
              + maxKey
              + " bytes, tree.node.size / 8 - "
              + Node.LEAF_ENTRY
              + ")");
    }
    return key;
  }

  /** Checks a value: not null, at most {@link #maxValue} bytes. */
  public byte[] value(byte[] value) {
    if (value == null || value.length > maxValue) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "value: "
              + (value == null ? "null" : value.length + " bytes")
              + " (expected: 0 to "
              + maxValue
              + " bytes)");
    }
    return value;
  }

  /**
   * Checks a scan of keys {@code from} (inclusive, null: the first key) to {@code to} (exclusive,
   * null: past the last key), at most {@code limit} pairs.
   */
  public void scan(byte[] from, byte[] to, int limit) {
    if (from != null) {
      key(from);
    }
    if (to != null) {
      key(to);
    }
    if (from != null && to != null && java.util.Arrays.compareUnsigned(from, to) > 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "scan: from > to (expected: from <= to, unsigned bytes)");
    }
    if (limit <= 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "limit: " + limit + " (expected: > 0)");
    }
  }
}
