package io.ferrite.memory;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;

/**
 * A globally visible {@code <address, length>} range of a namespace (RStore's raddress): all or
 * part of one allocation. Immutable; pass {@link #address()} and {@link #length()} to other
 * clients, which {@link #init} their own.
 */
public final class RAddress {
  private final Namespace namespace;
  private final long address;
  private final long length;

  RAddress(Namespace namespace, long address, long length) {
    this.namespace = namespace;
    this.address = address;
    this.length = length;
  }

  /**
   * An raddress for {@code [address, address + length)} of {@code namespace}, checked at the
   * master: the range must lie inside one allocation.
   *
   * @throws FerriteException NOT_FOUND if {@code address} is not allocated, OUT_OF_BOUNDS if the
   *     range runs past its allocation, INVALID_ARGUMENT if {@code length <= 0}
   */
  public static RAddress init(Namespace namespace, long address, long length) {
    Namespace.checkPositive("raddress length", length);
    namespace.call(
        MemoryProtocol.LOOKUP, new Wire.Writer().i64(namespace.id()).i64(address).i64(length));
    return new RAddress(namespace, address, length);
  }

  public Namespace namespace() {
    return namespace;
  }

  public long address() {
    return address;
  }

  public long length() {
    return length;
  }

  /** Maps the whole range: see {@link #map(long, long, int)}. */
  public Mapping map(int flags) {
    return map(0, length, flags);
  }

  /**
   * Maps {@code [offset, offset + length)} of this range (a partial mapping of a large allocation,
   * §III-H): the master records a reference held by this client's session (so the memory is not
   * freed while mapped) and returns the chunk locations; this client opens the connections to their
   * servers, makes every region ready for one-sided ops, and takes a local staging buffer (unless
   * {@link MemoryFlags#MAP_NO_BUFFER}). After this, the mapping's reads and writes make no RPC.
   *
   * @throws FerriteException OUT_OF_BOUNDS for a range outside this raddress, NOT_FOUND if the
   *     allocation is gone, INVALID_ARGUMENT for unknown flags or a staging buffer over 2 GiB
   */
  public Mapping map(long offset, long length, int flags) {
    if (offset < 0 || length <= 0 || offset > this.length - length) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "map offset: "
              + offset
              + ", length: "
              + length
              + " (expected: 0 <= offset, 0 < length, offset + length <= "
              + this.length
              + " of "
              + this
              + ")");
    }
    if ((flags & ~MemoryFlags.KNOWN_MAP_FLAGS) != 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "map flags: 0x"
              + Integer.toHexString(flags)
              + " (expected: MAP_DEFAULT or MAP_NO_BUFFER)");
    }
    if ((flags & MemoryFlags.MAP_NO_BUFFER) == 0 && length > Integer.MAX_VALUE - 8) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "map of "
              + length
              + " B with a staging buffer (expected: at most 2 GiB; use MAP_NO_BUFFER or map in"
              + " parts)");
    }
    return Mapping.open(namespace, address + offset, length, flags);
  }

  @Override
  public String toString() {
    return "raddress 0x" + Long.toHexString(address) + " +" + length + " of " + namespace;
  }
}
