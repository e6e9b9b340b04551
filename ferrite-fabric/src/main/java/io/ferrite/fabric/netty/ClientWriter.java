package io.ferrite.fabric.netty;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.IovArray;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The send side of a client connection: frames are encoded, and usually written to the socket, on
 * the calling thread.
 *
 * <p>Why: handing each op to the event loop costs a wake-up of that loop (an eventfd write, then a
 * scheduler hop) before the request even leaves. Written by the caller, a request reaches the
 * server after one system call, and a round trip has the wake-ups of a raw socket ping-pong plus
 * the one that brings the response from the I/O thread to the caller.
 *
 * <h2>Who writes the socket</h2>
 *
 * Exactly one of two writers at a time, decided under {@link #lock}:
 *
 * <ul>
 *   <li><b>direct</b> (the normal state): the lock holder takes every op submitted so far (its own
 *       and those of threads that found the lock taken, which do not wait: {@link #combine}),
 *       assigns request ids, registers the ops with the {@link ClientHandler} (before a frame can
 *       be answered), encodes the frames and writes them to the socket with one {@code
 *       write}/{@code writev}, all under the lock, so frames never interleave and take effect in
 *       submission order.
 *   <li><b>loop</b>: when the socket would block (or a buffer cannot be written directly), the rest
 *       of the bytes, and every frame after them, are queued in order for the event loop, which
 *       writes them through Netty's outbound buffer (which waits for the socket to drain). Once
 *       Netty has written all of it ({@link #onLoopWritten}), the lock holder may write directly
 *       again.
 * </ul>
 *
 * The direct writes go to a duplicate of the socket's descriptor ({@link FdDup}) that only this
 * class closes, under the lock: Netty closes its own descriptor on the event loop at any time, and
 * a number closed under a writer could be reused by another file. Without epoll (NIO) or without a
 * duplicate, every frame takes the loop path.
 *
 * <p>The lock is held only for encoding and non-blocking system calls, never while waiting, so the
 * event loop may take it too.
 */
final class ClientWriter {
  private final ReentrantLock lock = new ReentrantLock();
  private final ClientHandler handler;

  /** Ops submitted by any thread, sent by the next lock holder in this order. */
  private final Queue<Outbound> submitted = PlatformDependent.newMpscQueue();

  /** Frames gathered into one system call at most (a few below Linux's IOV_MAX of 1024). */
  private static final int MAX_FRAMES_PER_WRITE = 1000;

  /** Frames for the event loop to write, in order. Single consumer: the event loop. */
  private final Queue<ByteBuf> queue = PlatformDependent.newMpscQueue();

  private final AtomicBoolean drainScheduled = new AtomicBoolean();
  private final Runnable drain = this::drain;
  private final ChannelFutureListener onLoopWritten = this::onLoopWritten;

  // Guarded by lock.
  private Channel channel;
  private ByteBufAllocator alloc;
  private FileDescriptor fd;
  private IovArray iov;
  private boolean loopOwns;
  private boolean inactive;
  private long nextRequestId = 1;
  private long nowNanos;
  private final List<ByteBuf> frames = new ArrayList<>();

  /** The last of {@link #frames} while frames may still be appended to it; see {@link #begin}. */
  private ByteBuf open;

  /** First and largest size of a shared frame buffer. */
  private static final int OPEN_MIN = 2048;

  private static final int OPEN_MAX = 16 << 10;

  /** The marker written after the last frames the loop wrote; event-loop confined. */
  private ChannelFuture lastMarker;

  ClientWriter(ClientHandler handler) {
    this.handler = handler;
  }

  /**
   * Starts sending on {@code ch} after its handshake, writing directly to {@code dup} (a duplicate
   * of its descriptor, now owned here) or, when null, through the event loop only.
   */
  void attach(Channel ch, FileDescriptor dup) {
    lock.lock();
    try {
      channel = ch;
      alloc = ch.alloc();
      fd = dup;
      if (inactive) {
        closeFd();
      }
    } finally {
      unlockAndHelp();
    }
  }

  /** Whether caller threads may write to the socket (a descriptor is attached); for tests. */
  boolean direct() {
    lock.lock();
    try {
      return fd != null;
    } finally {
      // A writer that found the lock taken left its frames to this holder.
      unlockAndHelp();
    }
  }

  void lock() {
    lock.lock();
  }

  /**
   * Releases the lock taken by anyone but {@link #combine}, then sends what was submitted
   * meanwhile. A caller whose {@code tryLock} failed left its op in {@link #submitted} for the
   * holder; only {@link #combine} looked again after unlocking, so an op submitted while the event
   * loop held the lock (its marker callback, say) waited for the next op to be sent, and without
   * one forever, with no timeout (it was not yet registered). Under TLS, where every frame takes
   * the loop, that window is open on every write.
   */
  private void unlockAndHelp() {
    lock.unlock();
    // Not inside an outer hold of this thread (a reentrant lock): that holder is mid-write.
    if (!submitted.isEmpty() && !lock.isHeldByCurrentThread()) {
      combine();
    }
  }

  void unlock() {
    unlockAndHelp();
  }

  // ---- sending (any thread)

  /** Sends {@code ops[from, to)} in order, or fails them if the connection is already lost. */
  void send(List<? extends Outbound> ops, int from, int to) {
    for (int i = from; i < to; i++) {
      submitted.offer(ops.get(i));
    }
    combine();
  }

  /** Sends one op, or fails it if the connection is already lost. */
  void send(Outbound op) {
    submitted.offer(op);
    combine();
  }

  /**
   * Flat combining: whoever gets the lock sends every submitted op, its own and those of threads
   * that found the lock taken. Those threads do not wait: the holder looks at the queue again after
   * unlocking, so no op is stranded. Under load, many threads' ops share one system call.
   */
  private void combine() {
    do {
      if (!lock.tryLock()) {
        return;
      }
      List<Outbound> failed = null;
      FerriteException failure = null;
      boolean registered = false;
      try {
        nowNanos = System.nanoTime();
        Outbound op;
        while ((op = submitted.poll()) != null) {
          FerriteException lost = lostCause();
          if (lost != null) {
            failure = lost;
            if (failed == null) {
              failed = new ArrayList<>();
            }
            failed.add(op);
            continue;
          }
          op.sendOn(this);
          registered = true;
          if (frames.size() >= MAX_FRAMES_PER_WRITE) {
            writeOut();
          }
        }
        writeOut();
      } finally {
        lock.unlock();
      }
      if (failed != null) {
        // Outside the lock: completing a future runs the caller's callbacks.
        for (Outbound f : failed) {
          f.failUnsent(failure);
        }
      }
      if (registered) {
        handler.ensureSweeping();
      }
    } while (!submitted.isEmpty());
  }

  /** Under the lock: why nothing can be sent now, or null. */
  private FerriteException lostCause() {
    FerriteException lost = handler.closedCause();
    if (lost != null) {
      return lost;
    }
    return channel == null ? notConnected() : null;
  }

  private static FerriteException notConnected() {
    return new FerriteException(ErrorCode.UNAVAILABLE, "connection is not established");
  }

  // ---- called by Outbound.sendOn and ClientOp.encode, under the lock

  /** Assigns {@code op} the next request id, registers it for its answer, and encodes it. */
  void frame(ClientOp op) {
    long id = nextRequestId++;
    op.requestId = id;
    handler.register(op, nowNanos);
    op.encode(this, id);
  }

  /**
   * Starts a request frame of {@code bodyLength} body bytes: writes its header into the pooled
   * buffer the frames of this write share, and returns that buffer with room for the first {@code
   * bodyBytesHere} body bytes, which the caller writes. The rest of the body, if any, follows with
   * {@link #add}. Small frames sent together thus go out from one buffer (one allocation, one
   * iovec) however many there are.
   */
  ByteBuf begin(int type, long requestId, int bodyLength, int bodyBytesHere) {
    int need = Frames.HEADER + bodyBytesHere;
    ByteBuf b = open;
    if (b != null && b.maxWritableBytes() >= need) {
      b.ensureWritable(need);
    } else {
      b = alloc.ioBuffer(Math.max(OPEN_MIN, need), Math.max(OPEN_MAX, need));
      frames.add(b);
      open = b;
    }
    Wire.writeHeader(b, bodyLength, type, 0, 0, requestId);
    return b;
  }

  /**
   * Appends the rest of the current frame's body as a buffer of its own (a large payload sent from
   * the caller's memory); ownership passes here. The next frame starts a new shared buffer, so
   * bytes stay in order.
   */
  void add(ByteBuf buf) {
    frames.add(buf);
    open = null;
  }

  // ---- writing, under the lock

  private void writeOut() {
    int n = frames.size();
    if (n == 0) {
      return;
    }
    int i = loopOwns || fd == null ? 0 : writeDirect();
    if (i < n) {
      loopOwns = true;
      for (int k = i; k < n; k++) {
        queue.offer(frames.get(k));
      }
      scheduleDrain();
    }
    frames.clear();
    open = null;
  }

  /**
   * Writes as much of {@link #frames} as the socket takes without blocking; releases what it wrote
   * and returns the index of the first frame not written completely (partly written ones have their
   * reader index moved past the written bytes).
   */
  private int writeDirect() {
    int n = frames.size();
    int i = 0;
    try {
      while (i < n) {
        for (int k = i; k < n; k++) {
          ByteBuf b = frames.get(k);
          if (!b.hasMemoryAddress()) {
            // A heap buffer (e.g. a caller's large heap write): the kernel needs an address.
            ByteBuf d = alloc.directBuffer(b.readableBytes());
            d.writeBytes(b);
            b.release();
            frames.set(k, d);
          }
        }
        long written;
        int end;
        if (i == n - 1) {
          ByteBuf b = frames.get(i);
          written = fd.writeAddress(b.memoryAddress(), b.readerIndex(), b.writerIndex());
          end = n;
        } else {
          if (iov == null) {
            iov = new IovArray();
          }
          iov.clear();
          end = i;
          while (end < n) {
            ByteBuf b = frames.get(end);
            if (!iov.add(b, b.readerIndex(), b.readableBytes())) {
              break;
            }
            end++;
          }
          if (end == i) {
            return i; // cannot happen with IOV_MAX >= 1; the loop copes either way
          }
          written = fd.writevAddresses(iov.memoryAddress(0), iov.count());
        }
        while (i < end) {
          ByteBuf b = frames.get(i);
          int r = b.readableBytes();
          if (written >= r) {
            written -= r;
            b.release();
            i++;
          } else {
            b.skipBytes((int) written);
            return i; // the socket is full
          }
        }
      }
    } catch (IOException e) {
      // Broken socket: the loop's write of the rest meets the same error and closes the channel.
    }
    return i;
  }

  private void scheduleDrain() {
    if (!drainScheduled.get() && drainScheduled.compareAndSet(false, true)) {
      try {
        channel.eventLoop().execute(drain);
      } catch (RejectedExecutionException e) {
        // The event loop is gone (the fabric closed): nothing will ever send these.
        drainScheduled.set(false);
        releaseQueued();
      }
    }
  }

  private void releaseQueued() {
    ByteBuf b;
    while ((b = queue.poll()) != null) {
      b.release();
    }
  }

  // ---- the event loop's part

  /** On the event loop: writes everything queued, then one flush. */
  private void drain() {
    // Cleared first: frames queued after this point schedule another drain, so none is stranded.
    drainScheduled.set(false);
    Channel ch = channel;
    ByteBuf b;
    int n = 0;
    while ((b = queue.poll()) != null) {
      ch.write(b, ch.voidPromise());
      n++;
    }
    if (n > 0) {
      // Completes once Netty has written everything before it.
      ChannelFuture marker = ch.write(Unpooled.EMPTY_BUFFER);
      lastMarker = marker;
      marker.addListener(onLoopWritten);
      ch.flush();
    }
  }

  /** On the event loop: the last frames it was given are written; direct writes may resume. */
  private void onLoopWritten(ChannelFuture f) {
    if (f != lastMarker || !f.isSuccess()) {
      return;
    }
    lock.lock();
    try {
      // Frames are queued under the lock, so an empty queue here means nothing is waiting.
      if (queue.isEmpty()) {
        loopOwns = false;
      }
    } finally {
      unlockAndHelp();
    }
  }

  /**
   * On the event loop, when the channel is closed: closes the duplicate descriptor (the socket then
   * closes) and drops frames not yet written.
   */
  void onInactive() {
    lock.lock();
    try {
      inactive = true;
      closeFd();
    } finally {
      unlockAndHelp();
    }
    releaseQueued();
  }

  /** From close(): the same as {@link #onInactive()} where the event loop is gone. */
  void close() {
    lock.lock();
    try {
      inactive = true;
      closeFd();
    } finally {
      unlockAndHelp();
    }
    if (channel != null) {
      scheduleDrain();
    }
  }

  private void closeFd() {
    if (fd != null) {
      try {
        fd.close();
      } catch (IOException e) {
        // The descriptor is released either way.
      }
      fd = null;
    }
    if (iov != null) {
      iov.release();
      iov = null;
    }
  }
}
