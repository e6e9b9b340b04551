package io.ferrite.fabric;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A region's memory: a file mapped into this process, read and written with plain and atomic memory
 * accesses. The memory server maps every region it owns; a shm client maps the same file and so
 * reaches the memory with no work by the server's CPU.
 *
 * <p>DRAM-tier regions are files under {@code /dev/shm}; disk-tier regions are files in a
 * configured directory. Files are created readable and writable by their owner only.
 *
 * <h2>Memory ordering</h2>
 *
 * {@link #readInto} and {@link #writeFrom} are plain copies with no ordering and no atomicity (a
 * racing read may be torn, as with RDMA). {@link #compareAndSwap}, {@link #fetchAndAdd}, {@link
 * #getLongAcquire} and {@link #putLongRelease} are the only ordered accesses: a {@code
 * putLongRelease} (or an atomic) pairs with a {@code getLongAcquire} (or an atomic) of the same
 * word in any process that maps the file. Words are little-endian (the native order on every
 * platform Ferrite runs on; checked at class load).
 *
 * <p>Thread-safety: all methods may be called concurrently; {@link #close()} must not race with
 * accesses (owners keep a region mapped until every user of it is gone). {@link #release()} may: it
 * stops the region for new ops and leaves the unmapping to the JVM, which unmaps a {@link
 * MappedByteBuffer} only once nothing refers to it any more. Every access below ends with a {@link
 * Reference#reachabilityFence}, so the region (and its buffer) stays reachable until the copy is
 * done: an op that passed {@link #check} before the release finishes on mapped memory.
 */
public final class MappedRegion implements AutoCloseable {
  /** Regions are indexed by {@code int}; 1 GiB keeps every offset + length well inside it. */
  public static final long MAX_LENGTH = 1L << 30;

  static {
    if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
      throw new ExceptionInInitializerError("Ferrite needs a little-endian platform");
    }
  }

  /** Watches released mappings: the JVM unmaps each once it is unreachable. */
  private static final Cleaner CLEANER =
      Cleaner.create(new NamedThreadFactory("ferrite-unmap", true));

  /** Regions released in this process whose memory the JVM has not unmapped yet. */
  private static final AtomicLong RELEASED_MAPPED = new AtomicLong();

  private final int id;

  /** The owner key (all rights, whole region); 0 on a client mapping that was not shown it. */
  private final long rkey;

  /** {@link Capabilities#readOnly} of the owner key (reads, whole region); 0: none known. */
  private final long readKey;

  /**
   * The block key table, if the region is a block pool whose keys were installed; null: only the
   * owner and read keys grant anything. Set once, after creation (a server knows the block size
   * from its config; a shm client from the MAP answer).
   */
  private volatile BlockKeys blockKeys;

  private final Path file;
  private final MappedByteBuffer mapped;
  private final UnsafeBuffer buffer;
  private final int length;
  private volatile boolean closed;

  /** Set by {@link #release()}: closed to new ops, unmapped by the JVM instead of by close. */
  private volatile boolean released;

  private MappedRegion(int id, long rkey, long readKey, Path file, MappedByteBuffer mapped) {
    this.id = id;
    this.rkey = rkey;
    this.readKey = readKey;
    this.file = file;
    this.mapped = mapped;
    this.buffer = new UnsafeBuffer(mapped);
    this.length = mapped.capacity();
  }

  /**
   * Creates {@code file} (owner read/write only) of {@code length} bytes, maps it and registers it
   * as region {@code id} guarded by {@code rkey}. The file gets its space now ({@link FileSpace}):
   * a full file system is NO_SPACE here, never a fault when a page is first touched.
   *
   * <p>A full file system while regions {@link #release() released} in this process are still
   * mapped is retried: their memory stays held until the JVM unmaps them, after a collection, so
   * (as {@code java.nio.Bits} does for direct memory) this asks for one and retries with growing
   * pauses, about half a second at most, and only while such regions remain. Without it, a server
   * that freed a region (a dropped kv table, a retired pool region) could not make the next one in
   * the space it just gave back until some later collection.
   *
   * @throws FerriteException {@link ErrorCode#INVALID_ARGUMENT} for a bad length, {@link
   *     ErrorCode#CONFLICT} if the file exists, {@link ErrorCode#NO_SPACE} if the file system is
   *     full, {@link ErrorCode#INTERNAL} on other I/O failures
   */
  public static MappedRegion create(Path file, int id, long length, long rkey) {
    try {
      return createOnce(file, id, length, rkey);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NO_SPACE || RELEASED_MAPPED.get() == 0) {
        throw e;
      }
      System.gc();
      long pause = 1;
      for (int retry = 0; retry < 9; retry++) {
        try {
          Thread.sleep(pause);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw e;
        }
        pause <<= 1;
        try {
          return createOnce(file, id, length, rkey);
        } catch (FerriteException again) {
          if (again.code() != ErrorCode.NO_SPACE || RELEASED_MAPPED.get() == 0) {
            throw again;
          }
        }
      }
      throw e;
    }
  }

  private static MappedRegion createOnce(Path file, int id, long length, long rkey) {
    checkLength(length);
    try {
      Files.createFile(
          file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (FileAlreadyExistsException e) {
      throw new FerriteException(ErrorCode.CONFLICT, "region file exists: " + file, e);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot create region file " + file, e);
    }
    try {
      return map(file, id, length, rkey, readKeyOf(rkey), true);
    } catch (RuntimeException e) {
      try {
        Files.deleteIfExists(file); // e.g. NO_SPACE: give back what was allocated
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  private static long readKeyOf(long ownerKey) {
    return ownerKey == 0 ? 0 : Capabilities.readOnly(ownerKey);
  }

  /**
   * Maps an existing region file, e.g. a shm client mapping a server's region, or a restarted
   * server re-opening its own. The file must be exactly {@code length} bytes.
   */
  public static MappedRegion open(Path file, int id, long length, long rkey) {
    return open(file, id, length, rkey, readKeyOf(rkey));
  }

  /**
   * Maps an existing region file knowing only the region-wide keys a server confirmed (a shm
   * client): {@code ownerKey} and {@code readKey}, either 0 if not known. Block keys are checked
   * against the {@link #attachBlockKeys attached} table.
   */
  public static MappedRegion open(Path file, int id, long length, long ownerKey, long readKey) {
    checkLength(length);
    try {
      long size = Files.size(file);
      if (size != length) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "region file " + file + " is " + size + " B (expected: " + length + " B)");
      }
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "cannot open region file " + file, e);
    }
    return map(file, id, length, ownerKey, readKey, false);
  }

  private static void checkLength(long length) {
    if (length <= 0 || length > MAX_LENGTH || (length & 7) != 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "region length: "
              + length
              + " (expected: a multiple of 8, > 0 and <= "
              + MAX_LENGTH
              + ")");
    }
  }

  private static MappedRegion map(
      Path file, int id, long length, long rkey, long readKey, boolean setLength) {
    try (FileChannel ch =
        FileChannel.open(file, EnumSet.of(StandardOpenOption.READ, StandardOpenOption.WRITE))) {
      if (setLength) {
        // Space now (NO_SPACE if there is none), not a SIGBUS when a page is first touched.
        FileSpace.allocate(ch, file, length);
      }
      MappedByteBuffer mbb = ch.map(FileChannel.MapMode.READ_WRITE, 0, length);
      return new MappedRegion(id, rkey, readKey, file, mbb);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot map region file " + file, e);
    }
  }

  public int id() {
    return id;
  }

  /** The owner key: all rights on the whole region (0 if unknown here). Never log it. */
  public long rkey() {
    return rkey;
  }

  /** The region's read key: reads of the whole region (0 if unknown here). Never log it. */
  public long readKey() {
    return readKey;
  }

  /** Installs the block key table (once); block keys grant nothing before. */
  public synchronized void attachBlockKeys(BlockKeys keys) {
    if (blockKeys != null) {
      throw new IllegalStateException("region " + id + " has its block keys already");
    }
    if (keys.blocks() * keys.blockSize() > length) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, keys + " reaches past region " + id + " of " + length + " B");
    }
    blockKeys = keys;
  }

  /** The block key table, or null. */
  public BlockKeys blockKeys() {
    return blockKeys;
  }

  /** What {@code key} grants on this region as a whole (MAP's answer). */
  public enum Grant {
    /** No right at all. */
    NONE,
    /** The owner key: every op on every byte. */
    OWNER,
    /** The read key: reads of every byte. */
    READ,
    /** A key of some block(s) in the block key table: checked per op against the table. */
    BLOCK
  }

  /** What {@code key} grants (a scan of the block table: for MAP, never on the data path). */
  public Grant grantOf(long key) {
    if (key == 0) {
      return Grant.NONE;
    }
    if (key == rkey) {
      return Grant.OWNER;
    }
    if (key == readKey) {
      return Grant.READ;
    }
    BlockKeys k = blockKeys;
    return k != null && k.grantsSome(key) ? Grant.BLOCK : Grant.NONE;
  }

  public long length() {
    return length;
  }

  public Path file() {
    return file;
  }

  /** The mapped memory, for fabrics that copy to or from it directly (zero-copy sends). */
  public UnsafeBuffer buffer() {
    return buffer;
  }

  /**
   * Checks a one-sided access with {@code presentedKey}. Returns {@link ErrorCode#OK} when the key
   * grants {@code access} on all of {@code [offset, offset + len)}; otherwise the code to answer
   * with:
   *
   * <ul>
   *   <li>the owner key: bounds only;
   *   <li>the read key: reads only ({@link ErrorCode#PERMISSION_DENIED} for a write or an atomic);
   *   <li>any other key: the block key table. The op must lie inside one block and the key be that
   *       block's read-write key (every op) or its read-only key (reads; else {@code
   *       PERMISSION_DENIED}). A key of another block, a revoked one, 0, or any other value is
   *       {@link ErrorCode#BAD_RKEY}: it grants nothing on these bytes.
   * </ul>
   *
   * {@link Access#ATOMIC} additionally requires an 8-byte aligned offset. O(1): compares, a shift
   * and two acquire loads for a block key; no allocation.
   */
  public ErrorCode check(long presentedKey, long offset, long len, Access access) {
    if (closed) {
      return ErrorCode.NO_SUCH_REGION;
    }
    Lease l = lease;
    if (l != null && !l.valid()) {
      return ErrorCode.UNAVAILABLE;
    }
    if (presentedKey == 0) {
      return ErrorCode.BAD_RKEY;
    }
    if (presentedKey == rkey) {
      return bounds(offset, len, access);
    }
    if (presentedKey == readKey) {
      return access != Access.READ ? ErrorCode.PERMISSION_DENIED : bounds(offset, len, access);
    }
    BlockKeys k = blockKeys;
    if (k == null) {
      return ErrorCode.BAD_RKEY;
    }
    ErrorCode b = bounds(offset, len, access);
    if (b != ErrorCode.OK) {
      return b;
    }
    long first = k.blockOf(offset);
    // A zero-length op names the block its offset is in.
    if (first >= k.blocks() || k.blockOf(offset + Math.max(len, 1) - 1) != first) {
      return ErrorCode.BAD_RKEY;
    }
    int i = (int) first;
    if (k.rwKeyAcquire(i) == presentedKey) {
      return ErrorCode.OK;
    }
    if (k.roKeyAcquire(i) == presentedKey) {
      return access == Access.READ ? ErrorCode.OK : ErrorCode.PERMISSION_DENIED;
    }
    return ErrorCode.BAD_RKEY;
  }

  private ErrorCode bounds(long offset, long len, Access access) {
    if (offset < 0 || len < 0 || offset > length - len) {
      return ErrorCode.OUT_OF_BOUNDS;
    }
    if (access == Access.ATOMIC && (offset & 7) != 0) {
      return ErrorCode.MISALIGNED;
    }
    return ErrorCode.OK;
  }

  /**
   * What a region is served under, besides its keys: while {@link #valid} is false every one-sided
   * op on it fails with {@link ErrorCode#UNAVAILABLE} (checked by {@link #check}, on every fabric
   * that serves the op: not by a same-host client's own mapping of the file). A kv server hangs its
   * replicated shards' regions on its lease from the master (docs/KV.md "Leases"), so a primary
   * that was paused or cut off and then deposed never answers a reader with old data.
   */
  public interface Lease {
    /** Whether ops may be served now. Called on every op: a volatile read and a clock read. */
    boolean valid();
  }

  /**
   * The words every refusal for a lapsed lease carries (this class's and a face's own, e.g. a kv
   * shard's RPCs): a client tells "the server answered, but not now" from "the server cannot be
   * reached" by them, both being {@link ErrorCode#UNAVAILABLE}.
   */
  public static final String LEASE_LAPSED = "lease lapsed";

  /** Null: no lease (the common case: one volatile read per op). */
  private volatile Lease lease;

  /** Serves ops on this region only while {@code l} is valid (null: always). */
  public void lease(Lease l) {
    lease = l;
  }

  /** Describes a failed {@link #check}, saying what was expected. */
  public String describe(ErrorCode code, long offset, long len) {
    return switch (code) {
      case BAD_RKEY ->
          "no valid key for bytes [" + offset + ", " + (offset + len) + ") of region " + id;
      case PERMISSION_DENIED -> "a read-only key cannot write region " + id;
      case OUT_OF_BOUNDS ->
          "offset: "
              + offset
              + ", length: "
              + len
              + " (expected: 0 <= offset and offset + length <= "
              + length
              + " in region "
              + id
              + ")";
      case MISALIGNED -> "offset: " + offset + " (expected: a multiple of 8 for an atomic)";
      case NO_SUCH_REGION -> "region " + id + " is closed";
      case UNAVAILABLE ->
          "region "
              + id
              + " is not served now: its server's "
              + LEASE_LAPSED
              + " (it has not heard from the master lately, and may have been declared DEAD); ask"
              + " the master where its data lives";
      default -> code.name();
    };
  }

  /** Plain copy of {@code dst.remaining()} bytes at {@code offset} into {@code dst}. */
  public void readInto(long offset, ByteBuffer dst) {
    buffer.getBytes((int) offset, dst, dst.position(), dst.remaining());
    Reference.reachabilityFence(this);
  }

  /** Plain copy of {@code src.remaining()} bytes from {@code src} to {@code offset}. */
  public void writeFrom(long offset, ByteBuffer src) {
    buffer.putBytes((int) offset, src, src.position(), src.remaining());
    Reference.reachabilityFence(this);
  }

  /**
   * Atomically replaces the word at {@code offset} with {@code update} if it equals {@code expect};
   * returns the previous value (the swap happened iff it equals {@code expect}). Full fence.
   */
  public long compareAndSwap(long offset, long expect, long update) {
    int i = (int) offset;
    try {
      while (true) {
        long cur = buffer.getLongVolatile(i);
        if (cur != expect) {
          // Linearizes at this read: the word did not hold expect.
          return cur;
        }
        if (buffer.compareAndSetLong(i, expect, update)) {
          return expect;
        }
      }
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Atomically adds {@code delta} to the word at {@code offset}; returns the previous value. */
  public long fetchAndAdd(long offset, long delta) {
    long previous = buffer.getAndAddLong((int) offset, delta);
    Reference.reachabilityFence(this);
    return previous;
  }

  /** Reads a word with acquire semantics; pairs with {@link #putLongRelease} and the atomics. */
  public long getLongAcquire(long offset) {
    long v = buffer.getLongVolatile((int) offset);
    Reference.reachabilityFence(this);
    return v;
  }

  /** Writes a word with release semantics; pairs with {@link #getLongAcquire}. */
  public void putLongRelease(long offset, long value) {
    buffer.putLongOrdered((int) offset, value);
    Reference.reachabilityFence(this);
  }

  /** Writes a 32-bit word with release semantics (native order, as {@link #putLongRelease}). */
  public void putIntRelease(long offset, int value) {
    buffer.putIntOrdered((int) offset, value);
    Reference.reachabilityFence(this);
  }

  public boolean isClosed() {
    return closed;
  }

  /** Whether {@link #release()} was called (the memory is the JVM's to unmap). */
  public boolean isReleased() {
    return released;
  }

  /**
   * Closes the region to new ops without unmapping it, so that it may race with accesses: {@link
   * #check} answers {@link ErrorCode#NO_SUCH_REGION} from now on, an op that passed the check
   * before finishes on the mapped memory, and the JVM unmaps the memory once nothing refers to the
   * region or its buffer (the {@link MappedByteBuffer}'s cleaner, after a garbage collection). The
   * owner drops its references after calling this. A later {@link #close()} does nothing.
   * Idempotent.
   */
  public synchronized void release() {
    if (!closed) {
      released = true;
      closed = true;
      RELEASED_MAPPED.incrementAndGet();
      // Runs when the buffer is phantom reachable, i.e. when its own cleaner unmaps it.
      CLEANER.register(mapped, RELEASED_MAPPED::decrementAndGet);
    }
  }

  /**
   * How many regions of this process were {@link #release() released} and are still mapped (some
   * op, or a reference not yet collected, holds them): their memory comes back after a GC.
   */
  public static long releasedStillMapped() {
    return RELEASED_MAPPED.get();
  }

  /** Unmaps the memory. Does not delete the file. Idempotent; does nothing after release. */
  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      IoUtil.unmap(mapped);
      BlockKeys k = blockKeys;
      if (k != null) {
        k.unmap();
      }
    }
  }

  /**
   * Releases the region ({@link #release()}: unmapped by the JVM once no op holds it) and deletes
   * its file. Deleting, not truncating: a process that still maps the file (a shm client) keeps
   * reading the bytes it had, never faults, and the memory goes back when the last mapping goes.
   */
  public void releaseAndDelete() {
    release();
    deleteKeys();
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete region file " + file, e);
    }
  }

  /** Unmaps and deletes the file. */
  public void closeAndDelete() {
    close();
    deleteKeys();
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete region file " + file, e);
    }
  }

  private void deleteKeys() {
    BlockKeys k = blockKeys;
    if (k != null) {
      k.delete();
    }
  }

  @Override
  public String toString() {
    return "region " + id + " (" + length + " B, " + file + ")";
  }
}
