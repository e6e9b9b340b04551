package io.ferrite.memory;

/** Flags of {@link Namespace#alloc} and {@link RAddress#map}. */
public final class MemoryFlags {
  private MemoryFlags() {}

  /** {@code alloc}: no flags, an in-place (zero-copy) allocation. */
  public static final int ALLOC_DEFAULT = 0;

  /**
   * {@code alloc}: a copy-on-write allocation (RStore §III-G). Writes go out of place to fresh
   * chunks leased from the master (one writer at a time, 10 s leases) and are published atomically:
   * a reader sees a whole generation, and a writer that dies mid-write leaves the last published
   * data intact. Writes make RPCs; reads stay one-sided.
   */
  public static final int ALLOC_COW = 1;

  /** {@code map}: no flags; the mapping gets a local staging buffer of its length. */
  public static final int MAP_DEFAULT = 0;

  /**
   * {@code map}: no local staging buffer; the caller reads into and writes from its own buffers
   * only (for mappings larger than one Java buffer, 2 GiB, or when the caller has the buffers).
   */
  public static final int MAP_NO_BUFFER = 1;

  static final int KNOWN_MAP_FLAGS = MAP_NO_BUFFER;
}
