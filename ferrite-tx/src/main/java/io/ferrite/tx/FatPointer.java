package io.ferrite.tx;

import io.ferrite.kernel.proto.Wire;

/**
 * The address of a tx object (FaRM §3.5, fat pointers): region and offset, with the object's size
 * and the incarnation it had when allocated. A reader that finds another incarnation at the address
 * knows the object was freed (and perhaps the slot reused for another object of the same size
 * class).
 *
 * @param region the tx region id (the master's region map), not a fabric region id
 * @param offset the object's first byte in the region, a multiple of 64
 * @param size the payload bytes the allocation asked for
 * @param incarnation the slot's incarnation at allocation; bumped when the object is freed
 */
public record FatPointer(int region, long offset, int size, long incarnation) {
  public FatPointer {
    if (region < 0 || offset < 0 || (offset & (ObjectLayout.LINE - 1)) != 0 || size <= 0) {
      throw new IllegalArgumentException(
          "fat pointer: region "
              + region
              + ", offset "
              + offset
              + ", size "
              + size
              + " (expected: region >= 0, offset >= 0 a multiple of 64, size > 0)");
    }
  }

  void write(Wire.Writer w) {
    w.i32(region).i64(offset).i32(size).i64(incarnation);
  }

  static FatPointer read(Wire.Reader r) {
    return new FatPointer(r.i32("region"), r.i64("offset"), r.i32("size"), r.i64("incarnation"));
  }

  /** For the server half (another package): encodes this pointer. */
  public static void writeTo(Wire.Writer w, FatPointer p) {
    p.write(w);
  }

  /** For the server half: decodes a pointer. */
  public static FatPointer readFrom(Wire.Reader r) {
    return read(r);
  }

  @Override
  public String toString() {
    return "tx object "
        + region
        + ":"
        + offset
        + " (size "
        + size
        + ", incarnation "
        + incarnation
        + ")";
  }
}
