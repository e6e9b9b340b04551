package io.ferrite.fabric.netty;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Frames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.nio.charset.StandardCharsets;

/** Encoding helpers for the {@link Frames} layout, shared by the client and the server side. */
final class Wire {
  private Wire() {}

  /** Error messages are cut to this many UTF-8 bytes: they are diagnostics, not payload. */
  static final int MAX_ERROR_MESSAGE = 1024;

  /**
   * Writes a frame header for a frame of {@code bodyLength} body bytes at the writer index.
   *
   * <pre>
   * frameLength u32 | type u8 | flags u8 | status u16 | requestId u64
   * </pre>
   */
  static void writeHeader(
      ByteBuf buf, int bodyLength, int type, int flags, int status, long requestId) {
    buf.writeIntLE(Frames.HEADER_AFTER_LENGTH + bodyLength);
    buf.writeByte(type);
    buf.writeByte(flags);
    buf.writeShortLE(status);
    buf.writeLongLE(requestId);
  }

  /** A pooled buffer holding the header of a request and room for {@code bodyLength} bytes. */
  static ByteBuf request(ByteBufAllocator alloc, int type, long requestId, int bodyLength) {
    ByteBuf buf = alloc.ioBuffer(Frames.HEADER + bodyLength);
    writeHeader(buf, bodyLength, type, 0, 0, requestId);
    return buf;
  }

  /** A pooled buffer holding the header of an OK response and room for {@code bodyLength}. */
  static ByteBuf response(ByteBufAllocator alloc, int type, long requestId, int bodyLength) {
    ByteBuf buf = alloc.ioBuffer(Frames.HEADER + bodyLength);
    writeHeader(buf, bodyLength, type, Frames.FLAG_RESPONSE, ErrorCode.OK.wire(), requestId);
    return buf;
  }

  /**
   * Writes the header of an OK response with a body of {@code bodyLength} bytes into {@code buf}.
   */
  static void writeResponseHeader(ByteBuf buf, int type, long requestId, int bodyLength) {
    writeHeader(buf, bodyLength, type, Frames.FLAG_RESPONSE, ErrorCode.OK.wire(), requestId);
  }

  /** Writes an error response of {@code msg} (from {@link #truncatedUtf8}) into {@code buf}. */
  static void writeError(ByteBuf buf, int type, long requestId, ErrorCode code, byte[] msg) {
    writeHeader(buf, msg.length, type, Frames.FLAG_RESPONSE, code.wire(), requestId);
    buf.writeBytes(msg);
  }

  /** A complete error response: the status is {@code code}, the body the UTF-8 message. */
  static ByteBuf error(
      ByteBufAllocator alloc, int type, long requestId, ErrorCode code, String message) {
    byte[] msg = truncatedUtf8(message);
    ByteBuf buf = alloc.ioBuffer(Frames.HEADER + msg.length);
    writeHeader(buf, msg.length, type, Frames.FLAG_RESPONSE, code.wire(), requestId);
    buf.writeBytes(msg);
    return buf;
  }

  static byte[] truncatedUtf8(String message) {
    byte[] msg = String.valueOf(message).getBytes(StandardCharsets.UTF_8);
    if (msg.length <= MAX_ERROR_MESSAGE) {
      return msg;
    }
    byte[] cut = new byte[MAX_ERROR_MESSAGE];
    System.arraycopy(msg, 0, cut, 0, cut.length);
    return cut;
  }

  /** Decodes an error body (lenient: a malformed message is shown as replacement characters). */
  static String message(ByteBuf body) {
    int n = Math.min(body.readableBytes(), MAX_ERROR_MESSAGE);
    return body.toString(body.readerIndex(), n, StandardCharsets.UTF_8);
  }

  static String typeName(int type) {
    return switch (type) {
      case Frames.TYPE_HELLO -> "HELLO";
      case Frames.TYPE_AUTH -> "AUTH";
      case Frames.TYPE_READ -> "READ";
      case Frames.TYPE_WRITE -> "WRITE";
      case Frames.TYPE_CAS -> "CAS";
      case Frames.TYPE_FAA -> "FAA";
      case Frames.TYPE_MAP -> "MAP";
      case Frames.TYPE_RPC -> "RPC";
      case Frames.TYPE_RINGS -> "RINGS";
      case Frames.TYPE_DOORBELL -> "DOORBELL";
      default -> "type " + type;
    };
  }
}
