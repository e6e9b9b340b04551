package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The keys a {@link RegionRef} can carry, and the one-way step from a key to its read-only form.
 *
 * <p>A region has an owner key ({@link MappedRegion#rkey()}: all rights, the whole region; held by
 * its server and the services that own it) and a read key ({@link #readOnly} of it: reads only, the
 * whole region). A block-pool region may also carry a {@link BlockKeys} table: per block a
 * read-write key minted by the master for the block's current generation, and that key's read-only
 * form. Freeing a block installs the next generation's keys, so every key handed out for the old
 * one stops matching at once. Key 0 is never a grant.
 *
 * <p>{@link #readOnly} is the first 8 bytes of SHA-256 over a label and the key: anyone holding a
 * read-write key can compute its read-only form, nobody can go the other way (a preimage search of
 * 2^64 SHA-256 evaluations per key, and each key lives for one block generation). It is computed
 * when keys are minted or installed, never on the data path: checks compare stored words.
 */
public final class Capabilities {
  private static final byte[] READ_ONLY_LABEL =
      "ferrite-read-only-key".getBytes(StandardCharsets.US_ASCII);

  private Capabilities() {}

  /** The read-only form of {@code key}; never 0 (and never {@code key} itself, in practice). */
  public static long readOnly(long key) {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
    sha.update(READ_ONLY_LABEL);
    sha.update(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(key).array());
    long v = ByteBuffer.wrap(sha.digest()).order(ByteOrder.LITTLE_ENDIAN).getLong();
    return v == 0 ? 1 : v;
  }
}
