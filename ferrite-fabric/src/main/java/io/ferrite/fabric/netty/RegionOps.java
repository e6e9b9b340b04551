package io.ferrite.fabric.netty;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.unix.FileDescriptor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The client side of one-sided ops. A read or write longer than {@link #MAX_PART} is split into
 * frames of at most that many payload bytes, all sent at once (pipelined); its future completes
 * when every part has ended, with the first failure if any part failed, so that no part is still
 * writing into the caller's buffer once the caller sees the result.
 */
final class RegionOps {
  private RegionOps() {}

  /**
   * Payload bytes per frame: 4 MiB, which fits {@link
   * io.ferrite.fabric.ServerSpec#DEFAULT_MAX_FRAME}.
   */
  static final int MAX_PART = 4 << 20;

  /** Writes up to this size are copied into the request frame; larger ones are sent from src. */
  static final int COPY_WRITE_LIMIT = 4096;

  /** A read or write, split into parts. */
  abstract static class Parted implements Outbound {
    final CompletableFuture<Void> future = new CompletableFuture<>();
    final Counters counters;
    final OpKind kind;
    final RegionRef ref;
    final long offset;
    final int length;

    /** A private view of the caller's buffer, so its position and limit are never touched. */
    final ByteBuffer view;

    final int base;

    /** Where the op's in-flight permit goes back when it ends; null if it holds none. */
    private InFlight permits;

    /**
     * Parts not yet ended. Written under the writer's lock before any part is registered, then only
     * on the event loop (which sees it through the registration queue).
     */
    private int partsLeft;

    private FerriteException failure;

    Parted(Counters counters, OpKind kind, RegionRef ref, long offset, ByteBuffer buf) {
      this.counters = counters;
      this.kind = kind;
      this.ref = ref;
      this.offset = offset;
      this.view = buf.duplicate();
      this.base = buf.position();
      this.length = buf.remaining();
    }

    @Override
    public void sendOn(ClientWriter out) {
      int parts = Math.max(1, (int) ((length + (long) MAX_PART - 1) / MAX_PART));
      partsLeft = parts;
      for (int k = 0; k < parts; k++) {
        int at = k * MAX_PART;
        out.frame(newPart(at, Math.min(MAX_PART, length - at)));
      }
    }

    @Override
    public void holdPermit(InFlight permits) {
      this.permits = permits;
    }

    abstract ClientOp newPart(int at, int len);

    final void partDone(FerriteException e) {
      if (e != null && failure == null) {
        failure = e;
      }
      if (--partsLeft == 0) {
        InFlight.release(permits);
        permits = null;
        if (failure == null) {
          counters.record(kind, length);
          future.complete(null);
        } else {
          counters.recordError(kind);
          future.completeExceptionally(failure);
        }
      }
    }

    /**
     * Ends an op answered on a {@link Lane} (never sent on the shared connection, so it holds no
     * permit and has no parts): with {@code e}, or successfully when null.
     */
    final void endNow(FerriteException e) {
      if (e == null) {
        counters.record(kind, length);
        future.complete(null);
      } else {
        counters.recordError(kind);
        future.completeExceptionally(e);
      }
    }

    @Override
    public void failUnsent(FerriteException e) {
      InFlight.release(permits);
      permits = null;
      counters.recordError(kind);
      future.completeExceptionally(e);
    }

    String describe(int at, int len) {
      return Wire.typeName(kind == OpKind.READ ? Frames.TYPE_READ : Frames.TYPE_WRITE)
          + " of "
          + ref
          + " at "
          + (offset + at)
          + " ("
          + len
          + " B)";
    }
  }

  static final class Read extends Parted {
    Read(Counters counters, RegionRef ref, long offset, ByteBuffer dst) {
      super(counters, OpKind.READ, ref, offset, dst);
    }

    @Override
    ClientOp newPart(int at, int len) {
      return new ReadPart(this, at, len);
    }
  }

  static final class Write extends Parted {
    Write(Counters counters, RegionRef ref, long offset, ByteBuffer src) {
      super(counters, OpKind.WRITE, ref, offset, src);
    }

    @Override
    ClientOp newPart(int at, int len) {
      return new WritePart(this, at, len);
    }
  }

  // READ   regionId i32 | pad u32 | rkey u64 | offset u64 | length u32        [data]
  static final class ReadPart extends ClientOp {
    private final Parted parent;
    private final int at;
    private final int len;
    private int received;

    ReadPart(Parted parent, int at, int len) {
      this.parent = parent;
      this.at = at;
      this.len = len;
    }

    @Override
    int type() {
      return Frames.TYPE_READ;
    }

    @Override
    void encode(ClientWriter out, long requestId) {
      int body = Frames.REGION_OP_HEADER + 4;
      ByteBuf buf = out.begin(Frames.TYPE_READ, requestId, body, body);
      regionHeader(buf, parent.ref, parent.offset + at);
      buf.writeIntLE(len);
    }

    @Override
    int onHeader(int status, int bodyLength) {
      if (status != ErrorCode.OK.wire()) {
        return FrameReader.AGGREGATE;
      }
      if (bodyLength != len) {
        throw new FrameReader.BadFrameException(
            "READ response of " + bodyLength + " B (expected: " + len + ")");
      }
      // The data goes straight from the socket's read buffer into the caller's buffer.
      return FrameReader.STREAM;
    }

    @Override
    void onBodyChunk(ByteBuf in, int n, boolean last) {
      if (isDone()) {
        return; // timed out meanwhile: the caller may own its buffer again
      }
      if (n > 0) {
        ByteBuffer v = parent.view;
        int p = parent.base + at + received;
        v.limit(v.capacity()).position(p);
        v.limit(p + n);
        in.getBytes(in.readerIndex(), v);
        received += n;
      }
      if (last && markDone()) {
        parent.partDone(null);
      }
    }

    @Override
    int readDirect(FileDescriptor fd, int remaining) {
      ByteBuffer v = parent.view;
      if (isDone() || !v.isDirect()) {
        return 0;
      }
      int p = parent.base + at + received;
      int total = 0;
      try {
        // The kernel copies into the caller's buffer: one copy, as with a raw socket. Read until
        // the socket is drained, so that Netty's next read does not take body bytes through its
        // own buffer (a second copy).
        while (total < remaining) {
          int n = fd.read(v, p + total, p + remaining);
          if (n <= 0) {
            break;
          }
          total += n;
        }
      } catch (IOException e) {
        // Left for Netty's next read of the socket to report.
      }
      received += total;
      return total;
    }

    @Override
    void onSuccess(ByteBuf body) {
      throw new IllegalStateException("READ responses are streamed");
    }

    @Override
    void onFailure(FerriteException e) {
      parent.partDone(e);
    }

    @Override
    String describe() {
      return parent.describe(at, len);
    }
  }

  // WRITE  regionId i32 | pad u32 | rkey u64 | offset u64 | data ...          [empty]
  static final class WritePart extends ClientOp {
    private final Parted parent;
    private final int at;
    private final int len;

    WritePart(Parted parent, int at, int len) {
      this.parent = parent;
      this.at = at;
      this.len = len;
    }

    @Override
    int type() {
      return Frames.TYPE_WRITE;
    }

    @Override
    void encode(ClientWriter out, long requestId) {
      ByteBuffer src = parent.view.duplicate();
      int p = parent.base + at;
      src.limit(p + len).position(p);
      int body = Frames.REGION_OP_HEADER + len;
      if (len <= COPY_WRITE_LIMIT) {
        ByteBuf buf = out.begin(Frames.TYPE_WRITE, requestId, body, body);
        regionHeader(buf, parent.ref, parent.offset + at);
        buf.writeBytes(src);
      } else {
        // Large: the headers are copied, the payload is sent from the caller's buffer (the
        // contract keeps it untouched until the future completes, which is after the server
        // answered).
        ByteBuf buf = out.begin(Frames.TYPE_WRITE, requestId, body, Frames.REGION_OP_HEADER);
        regionHeader(buf, parent.ref, parent.offset + at);
        out.add(Unpooled.wrappedBuffer(src));
      }
    }

    @Override
    int onHeader(int status, int bodyLength) {
      if (status == ErrorCode.OK.wire() && bodyLength != 0) {
        throw new FrameReader.BadFrameException(
            "WRITE response of " + bodyLength + " B (expected: 0)");
      }
      return FrameReader.AGGREGATE;
    }

    @Override
    void onSuccess(ByteBuf body) {
      parent.partDone(null);
    }

    @Override
    void onFailure(FerriteException e) {
      parent.partDone(e);
    }

    @Override
    String describe() {
      return parent.describe(at, len);
    }
  }

  // CAS    regionId i32 | pad u32 | rkey u64 | offset u64 | expect u64 | update u64   [previous]
  // FAA    regionId i32 | pad u32 | rkey u64 | offset u64 | delta u64                 [previous]
  static final class Atomic extends FrameOp {
    final CompletableFuture<Long> future = new CompletableFuture<>();
    private final Counters counters;
    private final boolean cas;
    private final RegionRef ref;
    private final long offset;
    private final long a;
    private final long b;

    /** A compare-and-swap of {@code a} to {@code b}, or a fetch-and-add of {@code a}. */
    Atomic(Counters counters, boolean cas, RegionRef ref, long offset, long a, long b) {
      this.counters = counters;
      this.cas = cas;
      this.ref = ref;
      this.offset = offset;
      this.a = a;
      this.b = b;
    }

    private OpKind kind() {
      return cas ? OpKind.COMPARE_AND_SWAP : OpKind.FETCH_AND_ADD;
    }

    @Override
    int type() {
      return cas ? Frames.TYPE_CAS : Frames.TYPE_FAA;
    }

    @Override
    void encode(ClientWriter out, long requestId) {
      int body = Frames.REGION_OP_HEADER + (cas ? 16 : 8);
      ByteBuf buf = out.begin(type(), requestId, body, body);
      regionHeader(buf, ref, offset);
      buf.writeLongLE(a);
      if (cas) {
        buf.writeLongLE(b);
      }
    }

    @Override
    int onHeader(int status, int bodyLength) {
      if (status == ErrorCode.OK.wire() && bodyLength != 8) {
        throw new FrameReader.BadFrameException(
            Wire.typeName(type()) + " response of " + bodyLength + " B (expected: 8)");
      }
      return FrameReader.AGGREGATE;
    }

    @Override
    void onSuccess(ByteBuf body) {
      counters.record(kind(), 8);
      future.complete(body.getLongLE(body.readerIndex()));
    }

    @Override
    void onFailure(FerriteException e) {
      counters.recordError(kind());
      future.completeExceptionally(e);
    }

    @Override
    String describe() {
      return Wire.typeName(type()) + " of " + ref + " at " + offset;
    }
  }

  static void regionHeader(ByteBuf buf, RegionRef ref, long offset) {
    buf.writeIntLE(ref.regionId());
    buf.writeIntLE(0);
    buf.writeLongLE(ref.rkey());
    buf.writeLongLE(offset);
  }
}
