package io.ferrite.fabric;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A region's block key table: per block of {@code blockSize} bytes, the read-write key and its
 * read-only form ({@link Capabilities#readOnly}) that currently grant access to that block (0: no
 * grant). It lives in a small file next to the region file ({@code <region file>.keys}, mode 0600)
 * that the server writes and same-host (shm) clients map read-only, so that a client's own per-op
 * check sees a revocation at its next op, with no call to the server.
 *
 * <pre>
 *  0        4           8        12       16                       32
 *  +--------+-----------+--------+--------+------------------------+-----
 *  | magic  | blockSize | blocks | pad    | block 0: rwKey | roKey | block 1 ...
 *  | u32    | u32       | u32    | u32    | u64     | u64          |
 *  +--------+-----------+--------+--------+------------------------+-----
 * </pre>
 *
 * <p>Memory ordering: {@link #set} stores both words of a block with release semantics; {@link
 * #rwKeyAcquire}/{@link #roKeyAcquire} load them with acquire. A revocation is complete when {@code
 * set} returns (the server answers the master's REVOKE only then): an op checked after that, in any
 * process mapping the file, sees the new keys. An op that passed its check just before keeps going
 * on the memory, as an RDMA op already past the NIC's key check does when its memory region is
 * deregistered.
 *
 * <p>The header is written once at creation; the file gets its space then (zeros written through),
 * so no later access faults on a full tmpfs.
 */
public final class BlockKeys {
  static final int MAGIC = 0x594b4246; // "FBKY" little-endian
  private static final int HEADER = 16;
  private static final int ENTRY = 16;

  private final Path file;
  private final MappedByteBuffer mapped;
  private final UnsafeBuffer buffer;
  private final long blockSize;

  /** log2 of the block size if it is a power of two (the usual case: a shift), else -1. */
  private final int blockShift;

  private final int blocks;
  private final boolean writable;

  private BlockKeys(Path file, MappedByteBuffer mapped, boolean writable) {
    this.file = file;
    this.mapped = mapped;
    this.buffer = new UnsafeBuffer(mapped);
    this.writable = writable;
    if (buffer.capacity() < HEADER || buffer.getInt(0) != MAGIC) {
      throw new FerriteException(ErrorCode.PROTOCOL, "not a block key file: " + file);
    }
    this.blockSize = buffer.getInt(4) & 0xffffffffL;
    this.blockShift = Long.bitCount(blockSize) == 1 ? Long.numberOfTrailingZeros(blockSize) : -1;
    this.blocks = buffer.getInt(8);
    if (blockSize < 8
        || blockSize > MappedRegion.MAX_LENGTH
        || blocks < 0
        || (long) HEADER + (long) blocks * ENTRY > buffer.capacity()) {
      throw new FerriteException(ErrorCode.PROTOCOL, "malformed block key file: " + file);
    }
  }

  /** The key file of the region file {@code regionFile}. */
  public static Path fileFor(Path regionFile) {
    return regionFile.resolveSibling(regionFile.getFileName() + ".keys");
  }

  /**
   * Creates (replacing any old one: its keys are stale) the key table of {@code blocks} blocks of
   * {@code blockSize} bytes at {@code file}, every key 0 (no grant).
   */
  public static BlockKeys create(Path file, long blockSize, int blocks) {
    if (blockSize < 8 || blockSize > MappedRegion.MAX_LENGTH) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "block size: " + blockSize + " (expected: >= 8 and <= 1 GiB)");
    }
    if (blocks < 0 || blocks > (MappedRegion.MAX_LENGTH >> 3)) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, "blocks: " + blocks);
    }
    int length = HEADER + blocks * ENTRY;
    try {
      Files.deleteIfExists(file);
      Files.createFile(
          file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      try (FileChannel ch =
          FileChannel.open(file, EnumSet.of(StandardOpenOption.READ, StandardOpenOption.WRITE))) {
        // Written, not sparse: the pages exist from now on, a full tmpfs fails here.
        ByteBuffer init = ByteBuffer.allocate(length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        init.putInt(0, MAGIC).putInt(4, (int) blockSize).putInt(8, blocks);
        while (init.hasRemaining()) {
          ch.write(init, init.position());
        }
        ch.force(false);
        return new BlockKeys(file, ch.map(FileChannel.MapMode.READ_WRITE, 0, length), true);
      }
    } catch (IOException e) {
      try {
        Files.deleteIfExists(file); // what was written of it goes back
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      // A full file system (a tmpfs: the host's RAM) is NO_SPACE, as for the region itself.
      throw FileSpace.failed(file, length, String.valueOf(e.getMessage()), e);
    }
  }

  /** Maps an existing key file read-only (a shm client). */
  public static BlockKeys openReadOnly(Path file) {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      return new BlockKeys(file, ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size()), false);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "cannot open block key file " + file, e);
    }
  }

  public Path file() {
    return file;
  }

  public long blockSize() {
    return blockSize;
  }

  /** The index of the block holding byte {@code offset} (>= 0): a shift for power-of-two sizes. */
  public long blockOf(long offset) {
    return blockShift >= 0 ? offset >>> blockShift : offset / blockSize;
  }

  public int blocks() {
    return blocks;
  }

  /**
   * Installs {@code rwKey} (0: no grant) and its read-only form for block {@code index}; the keys
   * it had stop matching at once (see the class comment for the ordering).
   */
  public void set(int index, long rwKey) {
    if (!writable) {
      throw new IllegalStateException("block key file " + file + " is mapped read-only");
    }
    checkIndex(index);
    long ro = rwKey == 0 ? 0 : Capabilities.readOnly(rwKey);
    int at = HEADER + index * ENTRY;
    // Read-only first: a reader that sees the new rw key may still see the old ro one for an
    // instant, never the other way round; both are new once set returns.
    buffer.putLongOrdered(at + 8, ro);
    buffer.putLongOrdered(at, rwKey);
    Reference.reachabilityFence(this);
  }

  /** The read-write key of block {@code index} (acquire; pairs with {@link #set}). */
  public long rwKeyAcquire(int index) {
    long v = buffer.getLongVolatile(HEADER + index * ENTRY);
    Reference.reachabilityFence(this);
    return v;
  }

  /** The read-only key of block {@code index} (acquire; pairs with {@link #set}). */
  public long roKeyAcquire(int index) {
    long v = buffer.getLongVolatile(HEADER + index * ENTRY + 8);
    Reference.reachabilityFence(this);
    return v;
  }

  /** Whether {@code key} is the read-write or read-only key of some block (MAP; a scan). */
  public boolean grantsSome(long key) {
    if (key == 0) {
      return false;
    }
    for (int i = 0; i < blocks; i++) {
      if (rwKeyAcquire(i) == key || roKeyAcquire(i) == key) {
        return true;
      }
    }
    return false;
  }

  private void checkIndex(int index) {
    if (index < 0 || index >= blocks) {
      throw new IndexOutOfBoundsException(
          "block index: " + index + " (expected: >= 0 and < " + blocks + ")");
    }
  }

  /** Unmaps; must not race with checks (as {@link MappedRegion#close()}). */
  void unmap() {
    IoUtil.unmap(mapped);
  }

  /** Deletes the file (mappings keep working until unmapped). */
  void delete() {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete block key file " + file, e);
    }
  }

  @Override
  public String toString() {
    return "block keys (" + blocks + " blocks of " + blockSize + " B, " + file + ")";
  }
}
