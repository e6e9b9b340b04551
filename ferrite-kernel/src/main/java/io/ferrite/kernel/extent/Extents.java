package io.ferrite.kernel.extent;

import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.proto.LittleEndian;
import java.util.Arrays;

/**
 * The key-value extent both kv table layouts keep an out-of-line pair in (Pilaf's extents, FaRM's
 * out-of-line objects), in an extent region clients read one-sided; the tree face's meganode leaves
 * point to pairs in the same format. A kernel class because both faces use it:
 *
 * <pre>
 *  0                 4            8              12            16
 *  +-----------------+------------+--------------+-------------+-----+-------+
 *  | incarnation u32 | key len u32| value len u32| current u32 | key | value |
 *  +-----------------+------------+--------------+-------------+-----+-------+
 * </pre>
 *
 * The {@code incarnation} is a non-zero number unique in the shard, given when the extent is
 * allocated. The pointer to the extent (a hopscotch slot, a Pilaf entry) holds the XXH3-64 checksum
 * of the whole extent <i>with its current word taken as 0</i>: Pilaf's self-verifying pointer. A
 * reader that followed a pointer accepts a copy whose checksum matches; the extent's bytes do not
 * change while a pointer to it is published, so such a copy holds the pair the pointer named when
 * it was read (a copy mixed with the extent's next use fails the checksum, the incarnation at least
 * differs).
 *
 * <h2>The current word: an extent read without its pointer</h2>
 *
 * The server keeps one invariant, under the shard's lock: the current word holds the extent's
 * incarnation <i>only while the pointer to it is published and current</i>, and 0 otherwise:
 *
 * <ol>
 *   <li>a new extent is written with its current word 0, then the pointer to it is published, then
 *       the current word is set (release);
 *   <li>an extent stops being its key's value — the key is overwritten, deleted, or its shard
 *       retired or dropped — only after its current word was set back to 0 (and a full fence),
 *       before the pointer changes.
 * </ol>
 *
 * So a copy whose checksum matches a pointer seen earlier — a kv client's extent hint
 * (io.ferrite.kv.ExtentHints) — and whose current word equals its incarnation had that word copied
 * at an instant when the extent was its key's current value, and holds that value ({@link
 * #current}): it answers a get on its own, linearizable at that instant, without reading the table.
 * Readers through a pointer ignore the word, so a replaced extent stays readable for them until it
 * is reused, as in Pilaf. All words little-endian.
 */
public final class Extents {
  public static final int HEADER = 16;

  /** Offset of the current word, which the pointer's checksum does not cover. */
  public static final int CURRENT = 12;

  private Extents() {}

  /** The image of {@code key} and {@code value} under {@code incarnation} (not 0), not current. */
  public static byte[] image(int incarnation, byte[] key, byte[] value) {
    byte[] e = new byte[HEADER + key.length + value.length];
    LittleEndian.putInt(e, 0, incarnation);
    LittleEndian.putInt(e, 4, key.length);
    LittleEndian.putInt(e, 8, value.length);
    System.arraycopy(key, 0, e, HEADER, key.length);
    System.arraycopy(value, 0, e, HEADER + key.length, value.length);
    return e;
  }

  /** The incarnation of an extent copy (0: freed). */
  public static int incarnation(byte[] e) {
    return LittleEndian.getInt(e, 0);
  }

  /**
   * Whether an extent copy is whole and the one a pointer with {@code checksum} names: its lengths
   * adding up, its incarnation not 0, its checksum (current word as 0) matching. Clears the copy's
   * current word. False: retry.
   */
  public static boolean valid(byte[] e, long checksum) {
    if (e.length < HEADER
        || incarnation(e) == 0
        || (long) HEADER + LittleEndian.getInt(e, 4) + LittleEndian.getInt(e, 8) != e.length) {
      return false;
    }
    LittleEndian.putInt(e, CURRENT, 0);
    return Checksum64.of(e) == checksum;
  }

  /**
   * Whether an extent copy read without its pointer, by a hint with {@code checksum}, is its key's
   * current value: {@link #valid}, and its current word equal to its incarnation. Clears the copy's
   * current word.
   */
  public static boolean current(byte[] e, long checksum) {
    return e.length >= HEADER
        && LittleEndian.getInt(e, CURRENT) == incarnation(e)
        && valid(e, checksum);
  }

  /**
   * The value of {@code key} in the extent copy at {@code at} of {@code b} ({@code length} bytes),
   * read without its pointer by a hint with {@code checksum}: if the copy is {@link #current},
   * whole and of that key; else null. Clears the copy's current word.
   */
  public static byte[] currentValue(byte[] b, int at, int length, long checksum, byte[] key) {
    if (length < HEADER) {
      return null;
    }
    int incarnation = LittleEndian.getInt(b, at);
    int keyLength = LittleEndian.getInt(b, at + 4);
    int valueLength = LittleEndian.getInt(b, at + 8);
    if (incarnation == 0
        || LittleEndian.getInt(b, at + CURRENT) != incarnation
        || keyLength != key.length
        || (long) HEADER + keyLength + valueLength != length) {
      return null;
    }
    LittleEndian.putInt(b, at + CURRENT, 0);
    int from = at + HEADER;
    if (Checksum64.of(b, at, length) != checksum
        || !Arrays.equals(b, from, from + keyLength, key, 0, keyLength)) {
      return null;
    }
    return Arrays.copyOfRange(b, from + keyLength, from + keyLength + valueLength);
  }

  /** The checksum a pointer to the extent {@code image} (current word 0) holds. */
  public static long checksum(byte[] image) {
    return Checksum64.of(image);
  }

  /** Whether a verified extent holds {@code key}. */
  public static boolean hasKey(byte[] e, byte[] key) {
    return LittleEndian.getInt(e, 4) == key.length
        && Arrays.equals(e, HEADER, HEADER + key.length, key, 0, key.length);
  }

  /** The key of a verified extent. */
  public static byte[] key(byte[] e) {
    return Arrays.copyOfRange(e, HEADER, HEADER + LittleEndian.getInt(e, 4));
  }

  /** The value of a verified extent. */
  public static byte[] value(byte[] e) {
    int from = HEADER + LittleEndian.getInt(e, 4);
    return Arrays.copyOfRange(e, from, from + LittleEndian.getInt(e, 8));
  }
}
