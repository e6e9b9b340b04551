package io.ferrite.kernel.proto;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Little-endian codec helpers for the kernel's RPC bodies and journal records.
 *
 * <p>Primitive encodings used by every layout in {@link MasterProtocol}:
 *
 * <pre>
 * i32/u32  4 bytes LE      i64/u64  8 bytes LE      u8  1 byte      u16  2 bytes LE
 * str      u16 byteLength | UTF-8 bytes            (at most 65535 bytes)
 * bytes    u32 byteLength | raw bytes
 * </pre>
 *
 * A {@link Reader} checks every length before it reads, so a truncated or lying body fails with
 * {@link ErrorCode#INVALID_ARGUMENT} and never reads past the buffer.
 */
public final class Wire {
  private Wire() {}

  /** A growable little-endian buffer. Not thread-safe. */
  public static final class Writer {
    private ByteBuffer buf;

    public Writer() {
      this(64);
    }

    public Writer(int initialCapacity) {
      buf = ByteBuffer.allocate(Math.max(16, initialCapacity)).order(ByteOrder.LITTLE_ENDIAN);
    }

    private void ensure(int more) {
      if (buf.remaining() < more) {
        int cap = Math.max(buf.capacity() * 2, buf.position() + more);
        ByteBuffer n = ByteBuffer.allocate(cap).order(ByteOrder.LITTLE_ENDIAN);
        buf.flip();
        n.put(buf);
        buf = n;
      }
    }

    public Writer u8(int v) {
      ensure(1);
      buf.put((byte) v);
      return this;
    }

    public Writer u16(int v) {
      ensure(2);
      buf.putShort((short) v);
      return this;
    }

    public Writer i32(int v) {
      ensure(4);
      buf.putInt(v);
      return this;
    }

    public Writer i64(long v) {
      ensure(8);
      buf.putLong(v);
      return this;
    }

    public Writer str(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      if (b.length > 0xFFFF) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "string of " + b.length + " bytes (expected: <= 65535 bytes in UTF-8)");
      }
      u16(b.length);
      ensure(b.length);
      buf.put(b);
      return this;
    }

    public Writer bytes(byte[] b) {
      i32(b.length);
      ensure(b.length);
      buf.put(b);
      return this;
    }

    /** Bytes written so far. */
    public int size() {
      return buf.position();
    }

    /** A buffer holding the bytes written, positioned at 0, little-endian. */
    public ByteBuffer toBuffer() {
      ByteBuffer out = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      out.flip();
      return out;
    }

    public byte[] toArray() {
      byte[] b = new byte[buf.position()];
      buf.duplicate().flip().get(b);
      return b;
    }
  }

  /** A bounds-checked little-endian reader over a body. Not thread-safe. */
  public static final class Reader {
    private final ByteBuffer buf;
    private final String what;

    /** Reads {@code body} from its position to its limit; {@code what} names it in errors. */
    public Reader(ByteBuffer body, String what) {
      this.buf = body.slice().order(ByteOrder.LITTLE_ENDIAN);
      this.what = what;
    }

    private void need(int n, String field) {
      if (buf.remaining() < n) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "truncated "
                + what
                + ": "
                + field
                + " needs "
                + n
                + " bytes at offset "
                + buf.position()
                + ", "
                + buf.remaining()
                + " left");
      }
    }

    public int u8(String field) {
      need(1, field);
      return buf.get() & 0xFF;
    }

    public int u16(String field) {
      need(2, field);
      return buf.getShort() & 0xFFFF;
    }

    public int i32(String field) {
      need(4, field);
      return buf.getInt();
    }

    public long i64(String field) {
      need(8, field);
      return buf.getLong();
    }

    /** A non-negative count no larger than {@code max}, e.g. a list length. */
    public int count(String field, int max) {
      int n = i32(field);
      if (n < 0 || n > max) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            what + ": " + field + ": " + n + " (expected: >= 0 and <= " + max + ")");
      }
      return n;
    }

    public String str(String field) {
      int n = u16(field);
      need(n, field);
      byte[] b = new byte[n];
      buf.get(b);
      return new String(b, StandardCharsets.UTF_8);
    }

    public byte[] bytes(String field) {
      int n = count(field, buf.remaining());
      byte[] b = new byte[n];
      buf.get(b);
      return b;
    }

    /** Skips a {@link #bytes} field (its length, then that many bytes), copying nothing. */
    public void skipBytes(String field) {
      int n = count(field, buf.remaining());
      buf.position(buf.position() + n);
    }

    public int remaining() {
      return buf.remaining();
    }

    /** Fails if bytes are left over: a body longer than its layout is as wrong as a short one. */
    public void end() {
      if (buf.hasRemaining()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            what + ": " + buf.remaining() + " unexpected trailing bytes");
      }
    }
  }
}
