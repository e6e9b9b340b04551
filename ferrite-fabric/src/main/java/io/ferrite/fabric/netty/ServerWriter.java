package io.ferrite.fabric.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.unix.FileDescriptor;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.util.Queue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The send side of one accepted connection for frames that do not come from its read burst: RPC
 * answers (from a dispatch thread, or from whichever thread completed a handler's future), shm
 * doorbells, the RINGS answer. Such a frame is written to the socket by the thread that has it.
 *
 * <p>Why: {@code channel.writeAndFlush} from another thread is a task for the event loop, which
 * then has to be woken (an eventfd write, a scheduler hop, an {@code epoll_wait} return) before the
 * answer leaves: a second hand-off on every call served by a dispatch thread. Written directly, the
 * answer leaves after one {@code write} on the thread that made it.
 *
 * <h2>Who writes the socket</h2>
 *
 * As in {@link ClientWriter}, exactly one of two writers, decided under {@link #lock}:
 *
 * <ul>
 *   <li><b>direct</b>: the lock holder writes one whole frame with a non-blocking {@code write} to
 *       a duplicate of the socket's descriptor ({@link FdDup}, closed only here, under the lock).
 *       Allowed only while Netty holds no bytes at all ({@link #loopOwns} false), so a direct frame
 *       never lands inside one of Netty's, and the rest of a frame the socket did not take can be
 *       the next thing Netty writes;
 *   <li><b>loop</b>: otherwise, and for the rest of a frame the socket did not take, frames queue
 *       in order for the event loop ({@link #pending}), which writes and flushes them.
 * </ul>
 *
 * The event loop claims the socket under the lock before it hands Netty any frame of its own
 * ({@link #claimForLoop}: the {@link ResponseBuffer} of a read burst), writing what is pending
 * first; it flushes only under the lock ({@link #flush}), and afterwards sets {@link #loopOwns} to
 * whether Netty kept bytes back (a full socket); if it did, a marker written after them tells, once
 * written, that direct writes may resume (the last marker only: a later one means later bytes).
 *
 * <p>The lock is held only for a non-blocking system call or a Netty flush, never while waiting.
 * Without a duplicate descriptor (NIO, or dup failed) every frame takes the loop, as before.
 */
final class ServerWriter {
  private final ReentrantLock lock = new ReentrantLock();
  private final ChannelHandlerContext ctx;
  private final Channel ch;

  /** Frames for the event loop, in order; offered under the lock, drained by the loop. */
  private final Queue<ByteBuf> pending = PlatformDependent.newMpscQueue();

  private final AtomicBoolean drainScheduled = new AtomicBoolean();
  private final Runnable drain = this::drain;
  private final ChannelFutureListener onMarkerWritten = this::onMarkerWritten;

  /** Whether there is a duplicate to write to at all; when not, every frame takes the loop. */
  private final boolean direct;

  // Guarded by lock.
  private FileDescriptor fd;
  private boolean loopOwns;

  /** The last marker written after bytes Netty could not write at once; event-loop confined. */
  private ChannelFuture lastMarker;

  /** On the event loop, after the handshake: owns {@code dup} (null: loop writes only). */
  ServerWriter(ChannelHandlerContext ctx, FileDescriptor dup) {
    this.ctx = ctx;
    this.ch = ctx.channel();
    this.direct = dup != null;
    lock.lock();
    try {
      fd = dup;
      afterFlush(); // the handshake's answer may still be in Netty's buffer
    } finally {
      lock.unlock();
    }
  }

  /**
   * Sends one whole frame (ownership passes here), from any thread: directly if the loop owns
   * nothing, else through the loop. Never blocks on the socket.
   */
  void send(ByteBuf frame) {
    if (!direct) {
      loop(frame);
      return;
    }
    lock.lock();
    try {
      if (!loopOwns && fd != null && frame.hasMemoryAddress()) {
        int r = frame.readableBytes();
        long n;
        try {
          n = fd.writeAddress(frame.memoryAddress(), frame.readerIndex(), frame.writerIndex());
        } catch (IOException e) {
          n = 0; // broken socket: the loop's write meets the same error and closes the channel
        }
        if (n >= r) {
          frame.release();
          return;
        }
        frame.skipBytes((int) n);
      }
      // Behind what the loop has, or the rest of a frame the socket did not take: in order.
      loopOwns = true;
      pending.offer(frame);
    } finally {
      lock.unlock();
    }
    scheduleDrain();
  }

  private void loop(ByteBuf frame) {
    ch.writeAndFlush(frame, ch.voidPromise());
  }

  /**
   * On the event loop, before it hands Netty a frame of its own (a read burst's responses): from
   * now until its next flush Netty holds bytes, so the loop owns the socket. What other threads
   * left pending goes first: it may be the rest of a frame already partly on the socket, which
   * nothing may come before.
   */
  void claimForLoop() {
    lock.lock();
    try {
      writePending();
      loopOwns = true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * On the event loop, at the end of a read burst: writes what is pending, pushes the burst's
   * responses, and flushes, all under the lock.
   */
  void flush(ResponseBuffer responses) {
    lock.lock();
    try {
      writePending();
      responses.push();
      ctx.flush();
      afterFlush();
    } finally {
      lock.unlock();
    }
  }

  private void scheduleDrain() {
    if (!drainScheduled.get() && drainScheduled.compareAndSet(false, true)) {
      try {
        ch.eventLoop().execute(drain);
      } catch (RejectedExecutionException e) {
        // The event loop is gone (the fabric closed): nothing will ever send these.
        drainScheduled.set(false);
        releasePending();
      }
    }
  }

  /** On the event loop: writes and flushes what other threads left to it. */
  private void drain() {
    // Cleared first: frames queued after this point schedule another drain, so none is stranded.
    drainScheduled.set(false);
    lock.lock();
    try {
      if (writePending()) {
        ctx.flush();
        afterFlush();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Under the lock, on the loop: hands the pending frames to Netty, unflushed. */
  private boolean writePending() {
    ByteBuf b;
    boolean any = false;
    while ((b = pending.poll()) != null) {
      ctx.write(b, ctx.voidPromise());
      any = true;
    }
    return any;
  }

  /**
   * Under the lock, on the loop, right after a flush: the loop owns the socket while Netty holds
   * flushed bytes back; a marker after them says when it no longer does.
   */
  private void afterFlush() {
    ChannelOutboundBuffer out = ch.unsafe().outboundBuffer();
    if (out == null) {
      loopOwns = true; // closed: whatever comes is failed and freed by Netty
      return;
    }
    if (drained(out)) {
      loopOwns = !pending.isEmpty();
      return;
    }
    loopOwns = true;
    ChannelPromise marker = ch.newPromise();
    lastMarker = marker;
    marker.addListener(onMarkerWritten);
    ctx.write(Unpooled.EMPTY_BUFFER, marker);
    ctx.flush(); // marks the marker flushed; Netty writes it after the rest, when the socket drains
  }

  /** On the event loop: everything flushed before the last marker is on the socket. */
  private void onMarkerWritten(ChannelFuture f) {
    if (f != lastMarker || !f.isSuccess()) {
      return;
    }
    lock.lock();
    try {
      ChannelOutboundBuffer out = ch.unsafe().outboundBuffer();
      if (pending.isEmpty() && out != null && drained(out)) {
        loopOwns = false;
      }
    } finally {
      lock.unlock();
    }
  }

  /** Whether Netty holds no bytes at all: nothing flushed and unwritten, nothing unflushed. */
  private static boolean drained(ChannelOutboundBuffer out) {
    return out.isEmpty() && out.totalPendingWriteBytes() == 0;
  }

  /**
   * On the event loop, when the channel closed: closes the duplicate descriptor (so the socket can
   * close) and drops what is pending. Later frames go to the loop, which frees them.
   */
  void close() {
    lock.lock();
    try {
      loopOwns = true;
      if (fd != null) {
        try {
          fd.close();
        } catch (IOException e) {
          // The descriptor is released either way.
        }
        fd = null;
      }
    } finally {
      lock.unlock();
    }
    releasePending();
  }

  private void releasePending() {
    ByteBuf b;
    while ((b = pending.poll()) != null) {
      b.release();
    }
  }
}
