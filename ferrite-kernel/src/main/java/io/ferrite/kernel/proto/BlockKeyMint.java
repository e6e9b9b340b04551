package io.ferrite.kernel.proto;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mints the read-write key of one generation of one block, the same on the master (which hands it
 * out in ALLOCATE and OWNED answers) and on the block's memory server (which installs it in the
 * region's {@link io.ferrite.fabric.BlockKeys} table):
 *
 * <pre>
 * blockKeySecret = HMAC-SHA256(root cluster secret, "ferrite-block-keys")
 * key            = first 8 bytes (little-endian) of
 *                  HMAC-SHA256(blockKeySecret, serverId i32 | regionId i32 | region rkey u64
 *                                              | blockIndex i32 | generation i32)
 *                  (0 maps to 1: 0 is never a grant)
 * </pre>
 *
 * Only holders of the root secret (master, memory servers) can mint; clients only receive keys. The
 * region's owner rkey is in the input, so a region re-created under a new rkey never revives an old
 * key; the generation, bumped by every free, makes a freed block's old key useless. Thread-safe;
 * each call costs one HMAC over 24 bytes with a per-thread {@link Mac} already keyed (the provider
 * lookup and key schedule are paid once per thread, not per key: an OWNED answer of thousands of
 * blocks mints thousands of keys under the master's lock), paid per block handed out, never per op.
 */
public final class BlockKeyMint {
  private static final String HMAC = "HmacSHA256";

  /** A Mac keyed with the block-key secret, per thread (a Mac is not thread-safe). */
  private final ThreadLocal<Mac> macs;

  /**
   * @param rootSecret the cluster's root secret ({@code Credentials.secret()} of a server)
   */
  public BlockKeyMint(byte[] rootSecret) {
    byte[] blockKeySecret =
        keyed(rootSecret).doFinal("ferrite-block-keys".getBytes(StandardCharsets.US_ASCII));
    this.macs = ThreadLocal.withInitial(() -> keyed(blockKeySecret));
  }

  /** The read-write key of block {@code blockIndex} of the region, at {@code generation}. */
  public long key(int serverId, int regionId, long regionRkey, int blockIndex, int generation) {
    byte[] in =
        ByteBuffer.allocate(24)
            .order(ByteOrder.LITTLE_ENDIAN)
            .putInt(serverId)
            .putInt(regionId)
            .putLong(regionRkey)
            .putInt(blockIndex)
            .putInt(generation)
            .array();
    // doFinal resets the Mac to its key: the next call starts clean.
    long k = ByteBuffer.wrap(macs.get().doFinal(in)).order(ByteOrder.LITTLE_ENDIAN).getLong();
    return k == 0 ? 1 : k;
  }

  private static Mac keyed(byte[] key) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(key, HMAC));
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
    }
  }

  @Override
  public String toString() {
    return "BlockKeyMint[<secret hidden>]";
  }
}
