package io.ferrite.fabric.shm;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.lang.invoke.VarHandle;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.BitUtil;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

/**
 * One shm connection's RPC rings: a file (under the server's socket directory, mode 0600, unlinked
 * by the client as soon as it has mapped it) that both processes map.
 *
 * <pre>
 *  0        4         8           12          16          64             128            4096
 *  +--------+---------+-----------+-----------+---- .. ---+--------------+------ .. -----+
 *  | magic  | version | requestCap| responseCap|          | serverAsleep | clientAsleep  |
 *  | 'FRNG' | u32 = 1 | u32       | u32       |           | i32          | i32           |
 *  +--------+---------+-----------+-----------+---- .. ---+--------------+------ .. -----+
 *  4096                                 request ring: requestCap B + Agrona trailer (768 B)
 *  align(4096 + requestCap + 768, 4096) response ring: responseCap B + trailer
 * </pre>
 *
 * Both rings are Agrona {@link ManyToOneRingBuffer}s: requests are written by any of a client's
 * threads and read by the server's ring poller; responses are written by the poller (inline
 * handlers) and the service threads, and read by whichever client thread holds the client's
 * consumer role. Each sleep flag sits on its own cache line, away from the identity words.
 *
 * <h2>Sleep flags and doorbells (no lost wake-up)</h2>
 *
 * A consumer that stops polling sets its flag to 1 and then looks at its ring once more; a producer
 * writes its record and then reads the flag, and if it is 1 takes it back to 0 by compare-and-swap
 * and rings the doorbell (a DOORBELL frame on the connection's socket). Both sides put a full fence
 * between their store and their load (Dekker), so at least one sees the other: the consumer finds
 * the record, or the producer finds the flag and rings. The CAS makes one doorbell per sleep. See
 * {@link #setAsleep}, {@link #producerCheckAsleep}.
 *
 * <h2>Lifetime</h2>
 *
 * Threads touch the mapping only between {@link #acquire} and {@link #release}; {@link #close}
 * unmaps once the last of them has released, so a response written by a service thread after its
 * client went away finds the rings closed instead of unmapped memory.
 */
final class RingFile {
  static final int MAGIC = 0x474e5246; // "FRNG" little-endian
  static final int VERSION = 1;

  private static final int MAGIC_OFFSET = 0;
  private static final int VERSION_OFFSET = 4;
  private static final int REQUEST_CAPACITY_OFFSET = 8;
  private static final int RESPONSE_CAPACITY_OFFSET = 12;

  /** Written by the server's poller when it sleeps; CASed back to 0 by the client that rings. */
  static final int SERVER_ASLEEP = 64;

  /** Written by the client's consumer when nobody polls responses; CASed by the server. */
  static final int CLIENT_ASLEEP = 128;

  static final int HEADER = 4096;
  static final int TRAILER = RingBufferDescriptor.TRAILER_LENGTH;

  /** Ring capacities accepted from a file: powers of two in this range. */
  static final int MIN_CAPACITY = 4096;

  static final int MAX_CAPACITY = 16 << 20;

  private static final int CLOSED = Integer.MIN_VALUE;

  private final Path file;
  private final MappedByteBuffer mapped;
  private final UnsafeBuffer header;
  final ManyToOneRingBuffer requests;
  final ManyToOneRingBuffer responses;

  /** Threads inside acquire/release, plus {@link #CLOSED} once closing. */
  private final AtomicInteger users = new AtomicInteger();

  private RingFile(Path file, MappedByteBuffer mapped, int requestCap, int responseCap) {
    this.file = file;
    this.mapped = mapped;
    UnsafeBuffer all = new UnsafeBuffer(mapped);
    this.header = new UnsafeBuffer(all, 0, HEADER);
    int responseAt = responseOffset(requestCap);
    this.requests = new ManyToOneRingBuffer(new UnsafeBuffer(all, HEADER, requestCap + TRAILER));
    this.responses =
        new ManyToOneRingBuffer(new UnsafeBuffer(all, responseAt, responseCap + TRAILER));
  }

  private static int responseOffset(int requestCap) {
    return BitUtil.align(HEADER + requestCap + TRAILER, 4096);
  }

  private static long fileSize(int requestCap, int responseCap) {
    return (long) responseOffset(requestCap) + responseCap + TRAILER;
  }

  static void checkCapacity(String what, int cap) {
    if (cap < MIN_CAPACITY || cap > MAX_CAPACITY || !BitUtil.isPowerOfTwo(cap)) {
      throw new IllegalArgumentException(
          what
              + ": "
              + cap
              + " (expected: a power of two from "
              + MIN_CAPACITY
              + " to "
              + MAX_CAPACITY
              + ")");
    }
  }

  /**
   * Creates a ring file in {@code dir} (owner read/write only), maps it, and writes its identity.
   * Both sleep flags start at 1: until a consumer says it polls, producers ring.
   */
  static RingFile create(Path dir, String prefix, int requestCap, int responseCap) {
    checkCapacity("request ring capacity", requestCap);
    checkCapacity("response ring capacity", responseCap);
    Path file;
    try {
      file =
          Files.createTempFile(
              dir,
              prefix,
              ".rings",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "cannot create a ring file in " + dir, e);
    }
    try {
      RingFile r = map(file, fileSize(requestCap, responseCap), true, requestCap, responseCap);
      r.header.putInt(VERSION_OFFSET, VERSION);
      r.header.putInt(REQUEST_CAPACITY_OFFSET, requestCap);
      r.header.putInt(RESPONSE_CAPACITY_OFFSET, responseCap);
      r.header.putIntVolatile(SERVER_ASLEEP, 1);
      r.header.putIntVolatile(CLIENT_ASLEEP, 1);
      r.header.putIntOrdered(MAGIC_OFFSET, MAGIC);
      return r;
    } catch (RuntimeException e) {
      deleteQuietly(file);
      throw e;
    }
  }

  /**
   * Maps a ring file a server created, checking its identity and capacities against its size before
   * trusting any of it.
   */
  static RingFile open(Path file) {
    long size;
    try {
      size = Files.size(file);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "cannot open ring file " + file, e);
    }
    if (size < HEADER || size > fileSize(MAX_CAPACITY, MAX_CAPACITY)) {
      throw new FerriteException(
          ErrorCode.PROTOCOL, "ring file " + file + " of " + size + " B is not a ring file");
    }
    MappedByteBuffer probe = mapRaw(file, HEADER, false);
    int magic;
    int version;
    int requestCap;
    int responseCap;
    try {
      UnsafeBuffer h = new UnsafeBuffer(probe);
      magic = h.getIntVolatile(MAGIC_OFFSET);
      version = h.getInt(VERSION_OFFSET);
      requestCap = h.getInt(REQUEST_CAPACITY_OFFSET);
      responseCap = h.getInt(RESPONSE_CAPACITY_OFFSET);
    } finally {
      IoUtil.unmap(probe);
    }
    if (magic != MAGIC || version != VERSION) {
      throw new FerriteException(
          ErrorCode.PROTOCOL,
          "ring file " + file + ": magic 0x" + Integer.toHexString(magic) + ", version " + version);
    }
    try {
      checkCapacity("request ring capacity", requestCap);
      checkCapacity("response ring capacity", responseCap);
    } catch (IllegalArgumentException e) {
      throw new FerriteException(ErrorCode.PROTOCOL, "ring file " + file + ": " + e.getMessage());
    }
    if (size != fileSize(requestCap, responseCap)) {
      throw new FerriteException(
          ErrorCode.PROTOCOL,
          "ring file " + file + " is " + size + " B, its capacities say otherwise");
    }
    return map(file, size, false, requestCap, responseCap);
  }

  private static RingFile map(
      Path file, long size, boolean setLength, int requestCap, int responseCap) {
    return new RingFile(file, mapRaw(file, size, setLength), requestCap, responseCap);
  }

  private static MappedByteBuffer mapRaw(Path file, long size, boolean setLength) {
    try (FileChannel ch =
        FileChannel.open(file, EnumSet.of(StandardOpenOption.READ, StandardOpenOption.WRITE))) {
      if (setLength) {
        ch.truncate(0);
        // Space now: a full tmpfs is NO_SPACE at connect, never a SIGBUS in a client (or here)
        // when the rings first reach a page.
        io.ferrite.fabric.FileSpace.allocate(ch, file, size);
      }
      return ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "cannot map ring file " + file, e);
    }
  }

  Path file() {
    return file;
  }

  /** Removes the file; the mappings stay valid. Idempotent. */
  void unlink() {
    deleteQuietly(file);
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      // Left for the directory's owner to clean up; the mapping works either way.
    }
  }

  // ---- sleep flags

  /** The consumer at {@code flag} goes to sleep: a volatile store, ordered before later loads. */
  void setAsleep(int flag) {
    header.putIntVolatile(flag, 1);
  }

  /** The consumer at {@code flag} is polling again; producers need not ring. */
  void setAwake(int flag) {
    if (header.getIntVolatile(flag) != 0) {
      header.putIntVolatile(flag, 0);
    }
  }

  /**
   * For a producer that has just committed a record: true if the consumer at {@code flag} was
   * asleep and this caller won the right (and the duty) to ring its doorbell.
   */
  boolean producerCheckAsleep(int flag) {
    // StoreLoad: the record's commit (a release store) must be visible before the flag is read,
    // else consumer and producer could each miss the other's store (see the class comment).
    VarHandle.fullFence();
    return header.getIntVolatile(flag) != 0 && header.compareAndSetInt(flag, 1, 0);
  }

  boolean isAsleep(int flag) {
    return header.getIntVolatile(flag) != 0;
  }

  // ---- lifetime

  /** Enters the mapping; false once it is closing (then nothing may be touched). */
  boolean acquire() {
    for (; ; ) {
      int u = users.get();
      if (u < 0) {
        return false;
      }
      if (users.compareAndSet(u, u + 1)) {
        return true;
      }
    }
  }

  void release() {
    if (users.decrementAndGet() == CLOSED) {
      IoUtil.unmap(mapped);
    }
  }

  /** Closes: no new acquire succeeds; unmapped once every current user has released. */
  void close() {
    int before = users.getAndUpdate(u -> u < 0 ? u : u | CLOSED);
    if (before == 0) {
      IoUtil.unmap(mapped);
    }
  }

  boolean isClosed() {
    return users.get() < 0;
  }
}
