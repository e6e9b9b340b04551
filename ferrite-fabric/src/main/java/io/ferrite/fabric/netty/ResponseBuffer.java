package io.ferrite.fabric.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;

/**
 * The small responses of one connection's read burst, gathered into one pooled buffer: a burst of
 * pipelined requests (16 threads' reads, a batch) is answered with one buffer and one iovec rather
 * than a buffer, an outbound entry and an iovec per response. The handler writes the buffer out
 * before a frame whose body goes as a buffer of its own (so frames stay in order) and at the end of
 * the burst, just before its one flush.
 *
 * <p>A buffer starts at {@link #MIN} bytes and grows to at most {@link #MAX}; the channel counts
 * outbound buffers by capacity (see {@link NettyTransport}), so a peer that never reads its answers
 * is stopped by the write-buffer water mark after the memory it really holds.
 *
 * <p>Event-loop confined, like its handler.
 */
final class ResponseBuffer {
  static final int MIN = 2048;
  static final int MAX = 16 << 10;

  private final ChannelHandlerContext ctx;
  private ByteBuf current;

  /** Set once the connection writes from other threads too: told before each write of ours. */
  private ServerWriter writer;

  ResponseBuffer(ChannelHandlerContext ctx) {
    this.ctx = ctx;
  }

  /** From the handshake on, frames of ours are announced to {@code w} first. */
  void writer(ServerWriter w) {
    writer = w;
  }

  /**
   * A buffer with at least {@code frameBytes} writable at its writer index, where the caller writes
   * one whole frame (or, for a frame whose body follows in a buffer of its own, its header).
   */
  ByteBuf room(int frameBytes) {
    ByteBuf b = current;
    if (b != null) {
      if (b.maxWritableBytes() >= frameBytes) {
        b.ensureWritable(frameBytes);
        return b;
      }
      push();
    }
    b = ctx.alloc().ioBuffer(Math.max(MIN, frameBytes), Math.max(MAX, frameBytes));
    current = b;
    return b;
  }

  /** Writes what is gathered, then {@code body} as a buffer of its own; no flush. */
  void writeSeparately(ByteBuf body) {
    // One claim for both: what is gathered ends with this frame's header, and nothing that other
    // threads left pending may come between it and the body.
    claim();
    writeCurrent();
    ctx.write(body, ctx.voidPromise());
  }

  /** Writes what is gathered to the channel, without a flush. */
  void push() {
    if (current != null) {
      claim(); // between whole frames: pending frames of other threads may go first
      writeCurrent();
    }
  }

  private void claim() {
    if (writer != null) {
      writer.claimForLoop();
    }
  }

  private void writeCurrent() {
    ByteBuf b = current;
    if (b != null) {
      current = null;
      ctx.write(b, ctx.voidPromise());
    }
  }

  /** Drops what is gathered (the channel is gone). */
  void release() {
    ByteBuf b = current;
    if (b != null) {
      current = null;
      b.release();
    }
  }
}
