package io.ferrite.memory;

/** Flags of {@link Namespace#alloc} and {@link RAddress#map}. */
public final class MemoryFlags {
  private MemoryFlags() {}

  /** {@code alloc}: no flags, an in-place (zero-copy) allocation. */
  public static final int ALLOC_DEFAULT = 0;

  /** {@code map}: no flags; the mapping gets a local staging buffer of its length. */
  public static final int MAP_DEFAULT = 0;

  /**
   * {@code map}: no local staging buffer; the caller reads into and writes from its own buffers
   * only (for mappings larger than one Java buffer, 2 GiB, or when the caller has the buffers).
   */
  public static final int MAP_NO_BUFFER = 1;

  static final int KNOWN_MAP_FLAGS = MAP_NO_BUFFER;
}
