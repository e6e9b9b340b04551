package io.ferrite.fabric.netty;

import io.ferrite.fabric.Frames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Splits the inbound byte stream into {@link Frames} and hands each to a subclass, checking the
 * length field before anything is allocated.
 *
 * <p>A frame's header (16 bytes) is parsed first; {@link #onHeader} then decides how its body is
 * taken:
 *
 * <ul>
 *   <li>{@link #AGGREGATE}: {@link #onFrame} gets the whole body. If the body is already contiguous
 *       in the read buffer, it is a slice of it (no copy); otherwise it is gathered from the read
 *       buffers (see {@link #gather}). Either way it is valid only during the call.
 *   <li>{@link #STREAM}: {@link #onBodyChunk} gets the body piece by piece as it arrives, so a
 *       large read response can be copied straight into its destination without being gathered
 *       first.
 *   <li>{@link #DISCARD}: the body is skipped (a late answer to a timed-out request).
 * </ul>
 *
 * A subclass rejects a frame by throwing {@link BadFrameException}; the reader then closes the
 * connection through {@link #badFrame} and ignores the rest of the stream. Every inbound buffer is
 * released here, whatever happens.
 *
 * <p>Thread-confined to the channel's event loop, like every handler.
 */
abstract class FrameReader extends ChannelInboundHandlerAdapter {
  static final int AGGREGATE = 0;
  static final int STREAM = 1;
  static final int DISCARD = 2;

  private final byte[] partialHeader = new byte[Frames.HEADER];
  private int partialHeaderBytes;

  private int maxFrameLength;

  // The frame being read; bodyRemaining < 0 while a header is awaited.
  private int type;
  private int flags;
  private int status;
  private long requestId;
  private int bodyLength;
  private int bodyRemaining = -1;
  private int mode;
  private CompositeByteBuf gathered;

  /** Where {@link #readDirect} reads a header from the socket; made on first use. */
  private ByteBuffer headerScratch;

  private boolean failed;

  /**
   * @param maxFrameLength the largest {@code frameLength} field accepted (it counts every byte
   *     after itself)
   */
  FrameReader(int maxFrameLength) {
    this.maxFrameLength = maxFrameLength;
  }

  /** Changes the length limit, e.g. once a peer has authenticated. */
  final void maxFrameLength(int max) {
    this.maxFrameLength = max;
  }

  /**
   * A header has arrived and its length passed the limit. Returns how to take the body.
   *
   * @throws BadFrameException to close the connection
   */
  protected abstract int onHeader(
      ChannelHandlerContext ctx, int type, int flags, int status, long requestId, int bodyLength);

  /** A whole frame (mode {@link #AGGREGATE}); {@code body} is valid only during the call. */
  protected abstract void onFrame(
      ChannelHandlerContext ctx, int type, int flags, int status, long requestId, ByteBuf body);

  /**
   * {@code n} more body bytes of a {@link #STREAM} frame are readable in {@code in}, at its reader
   * index. The callee must not move the reader index; the reader skips them afterwards.
   */
  protected void onBodyChunk(ChannelHandlerContext ctx, ByteBuf in, int n, boolean last) {
    throw new IllegalStateException("STREAM without onBodyChunk");
  }

  /**
   * A {@link #STREAM} body has {@code remaining} bytes still to come and nothing is left in the
   * read buffer: a subclass may read some of them straight from the socket into their destination
   * (saving the copy through a read buffer) and return how many it read. Called on the event loop,
   * between Netty's own reads of the socket, so the byte stream stays in order.
   */
  protected int readBodyDirect(ChannelHandlerContext ctx, int remaining) {
    return 0;
  }

  /** Closes the connection for a frame that broke the protocol: logs once, then closes. */
  protected abstract void badFrame(ChannelHandlerContext ctx, String reason);

  /**
   * True once the connection is being closed for a bad frame; the rest of the stream is ignored.
   */
  final boolean failed() {
    return failed;
  }

  @Override
  public final void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof ByteBuf in)) {
      ctx.fireChannelRead(msg);
      return;
    }
    try {
      if (!failed) {
        decode(ctx, in);
      }
    } catch (BadFrameException e) {
      fail(ctx, e.getMessage());
    } finally {
      in.release();
    }
  }

  /** Ignores the rest of the stream, e.g. after refusing a handshake (the close is under way). */
  final void markFailed() {
    failed = true;
    releaseGathered();
  }

  private void fail(ChannelHandlerContext ctx, String reason) {
    if (!failed) {
      failed = true;
      releaseGathered();
      badFrame(ctx, reason);
    }
  }

  private void decode(ChannelHandlerContext ctx, ByteBuf in) {
    while (in.isReadable() && !failed) {
      if (bodyRemaining < 0) {
        if (!readHeader(ctx, in)) {
          return;
        }
      } else {
        readBody(ctx, in);
      }
    }
  }

  /** Returns false when the header is still incomplete. */
  private boolean readHeader(ChannelHandlerContext ctx, ByteBuf in) {
    long length;
    if (partialHeaderBytes == 0 && in.readableBytes() >= Frames.HEADER) {
      int i = in.readerIndex();
      length = in.getUnsignedIntLE(i);
      type = in.getUnsignedByte(i + 4);
      flags = in.getUnsignedByte(i + 5);
      status = in.getUnsignedShortLE(i + 6);
      requestId = in.getLongLE(i + 8);
      in.skipBytes(Frames.HEADER);
    } else {
      int n = Math.min(Frames.HEADER - partialHeaderBytes, in.readableBytes());
      in.readBytes(partialHeader, partialHeaderBytes, n);
      partialHeaderBytes += n;
      byte[] h = partialHeader;
      if (partialHeaderBytes >= Frames.LENGTH_FIELD) {
        // Refuse a bad length as soon as it is known, not when the rest of the header arrives.
        checkLength(
            (h[0] & 0xffL) | (h[1] & 0xffL) << 8 | (h[2] & 0xffL) << 16 | (h[3] & 0xffL) << 24);
      }
      if (partialHeaderBytes < Frames.HEADER) {
        return false;
      }
      partialHeaderBytes = 0;
      length = (h[0] & 0xffL) | (h[1] & 0xffL) << 8 | (h[2] & 0xffL) << 16 | (h[3] & 0xffL) << 24;
      type = h[4] & 0xff;
      flags = h[5] & 0xff;
      status = (h[6] & 0xff) | (h[7] & 0xff) << 8;
      long id = 0;
      for (int b = 15; b >= 8; b--) {
        id = id << 8 | (h[b] & 0xffL);
      }
      requestId = id;
    }
    // The length is checked before anything is sized by it.
    checkLength(length);
    bodyLength = (int) length - Frames.HEADER_AFTER_LENGTH;
    bodyRemaining = bodyLength;
    mode = onHeader(ctx, type, flags, status, requestId, bodyLength);
    if (bodyLength == 0) {
      finishEmpty(ctx);
    }
    return true;
  }

  private void checkLength(long length) {
    if (length < Frames.HEADER_AFTER_LENGTH || length > maxFrameLength) {
      throw new BadFrameException(
          "frame length "
              + length
              + " (expected: >= "
              + Frames.HEADER_AFTER_LENGTH
              + " and <= "
              + maxFrameLength
              + ")");
    }
  }

  private void finishEmpty(ChannelHandlerContext ctx) {
    bodyRemaining = -1;
    if (mode == AGGREGATE) {
      onFrame(ctx, type, flags, status, requestId, Unpooled.EMPTY_BUFFER);
    } else if (mode == STREAM) {
      onBodyChunk(ctx, Unpooled.EMPTY_BUFFER, 0, true);
    }
  }

  private void readBody(ChannelHandlerContext ctx, ByteBuf in) {
    int n = Math.min(bodyRemaining, in.readableBytes());
    switch (mode) {
      case AGGREGATE -> {
        if (gathered == null && n == bodyLength) {
          // Common case: the whole body is here; hand out a slice, no copy.
          ByteBuf body = in.slice(in.readerIndex(), n);
          in.skipBytes(n);
          bodyRemaining = -1;
          onFrame(ctx, type, flags, status, requestId, body);
          return;
        }
        gather(ctx, in, n);
        bodyRemaining -= n;
        if (bodyRemaining == 0) {
          bodyRemaining = -1;
          ByteBuf body = gathered;
          gathered = null;
          try {
            onFrame(ctx, type, flags, status, requestId, body);
          } finally {
            body.release();
          }
        }
      }
      case STREAM -> {
        bodyRemaining -= n;
        boolean last = bodyRemaining == 0;
        if (last) {
          bodyRemaining = -1;
        }
        onBodyChunk(ctx, in, n, last);
        in.skipBytes(n);
        if (!last && !in.isReadable()) {
          // The read buffer is used up: the rest of the body may be taken from the socket directly.
          readDirect(ctx);
        }
      }
      default -> {
        in.skipBytes(n);
        bodyRemaining -= n;
        if (bodyRemaining == 0) {
          bodyRemaining = -1;
        }
      }
    }
  }

  /**
   * With the read buffer used up inside a {@link #STREAM} body: takes the rest of the body straight
   * from the socket ({@link #readBodyDirect}), then, while the socket has more, the next frame's
   * header too ({@link #readHeaderDirect}), and that frame's body the same way if it streams. So
   * back-to-back large responses (several bulk reads in flight) go from the socket into their
   * destinations with no pass through a read buffer at all: the one copy a raw socket makes. It
   * stops at the first frame not taken directly, whose body then comes through the next read buffer
   * as usual, or when the socket is drained.
   */
  private void readDirect(ChannelHandlerContext ctx) {
    while (!failed && bodyRemaining > 0 && mode == STREAM) {
      int direct = readBodyDirect(ctx, bodyRemaining);
      if (direct <= 0) {
        return;
      }
      bodyRemaining -= direct;
      if (bodyRemaining > 0) {
        return; // the socket is drained
      }
      bodyRemaining = -1;
      onBodyChunk(ctx, Unpooled.EMPTY_BUFFER, 0, true);
      if (headerScratch == null) {
        headerScratch = ByteBuffer.allocateDirect(Frames.HEADER).order(ByteOrder.LITTLE_ENDIAN);
      }
      int want = Frames.HEADER - partialHeaderBytes;
      headerScratch.clear().limit(want);
      int got = readHeaderDirect(ctx, headerScratch);
      if (got <= 0) {
        return;
      }
      headerScratch.position(0).limit(got);
      // The header parser copes with a partial header; its checks and hooks run as for any frame.
      readHeader(ctx, Unpooled.wrappedBuffer(headerScratch));
      if (got < want) {
        return; // the socket is drained part way through the header
      }
    }
  }

  /**
   * Reads up to {@code dst.remaining()} bytes of the next frame's header straight from the socket
   * into {@code dst} (a direct buffer) from its position on, after a body taken by {@link
   * #readBodyDirect}; returns how many (0 when the socket has none, or when the subclass does not
   * read directly). The buffer's position and limit are left as they were.
   */
  protected int readHeaderDirect(ChannelHandlerContext ctx, ByteBuffer dst) {
    return 0;
  }

  /**
   * Adds the next {@code n} body bytes of {@code in} to the frame being gathered. A body that spans
   * reads is kept as a list of slices of the read buffers rather than copied into one buffer: a
   * large WRITE then costs one copy (read buffer to region) instead of two. A slice that would pin
   * a mostly-empty read buffer is copied instead, so the memory held stays within twice the
   * (already checked) frame length.
   */
  private void gather(ChannelHandlerContext ctx, ByteBuf in, int n) {
    if (gathered == null) {
      gathered = ctx.alloc().compositeDirectBuffer(MAX_COMPONENTS);
    }
    ByteBuf part;
    if (n >= in.capacity() / 2) {
      part = in.retainedSlice(in.readerIndex(), n);
    } else {
      part = ctx.alloc().ioBuffer(n, n);
      part.writeBytes(in, in.readerIndex(), n);
    }
    in.skipBytes(n);
    gathered.addComponent(true, part);
  }

  /** Past this many parts, CompositeByteBuf consolidates (copies); reads are rarely that small. */
  private static final int MAX_COMPONENTS = 4096;

  private void releaseGathered() {
    if (gathered != null) {
      gathered.release();
      gathered = null;
    }
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    releaseGathered();
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    releaseGathered();
    super.channelInactive(ctx);
  }

  /** Thrown by a subclass to reject a frame; closes the connection. */
  static final class BadFrameException extends RuntimeException {
    BadFrameException(String message) {
      super(message, null, false, false);
    }
  }
}
