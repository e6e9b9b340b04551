package io.ferrite.fabric.netty;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/** The client side of two-sided calls (RPC) and of shm's MAP. */
final class CallOps {
  private CallOps() {}

  // RPC    service u16 | opcode u16 | deadlineMillis u32 | request ...       [response ...]
  static final class Rpc extends FrameOp {
    final CompletableFuture<ByteBuffer> future = new CompletableFuture<>();
    private final Counters counters;
    private final int service;
    private final int opcode;
    private final ByteBuffer request;
    private final long deadlineMillis;

    Rpc(
        Counters counters,
        int service,
        int opcode,
        ByteBuffer request,
        long deadlineMillis,
        long startNanos) {
      this.counters = counters;
      this.service = service;
      this.opcode = opcode;
      this.request = request.duplicate();
      this.deadlineMillis = deadlineMillis;
      this.deadlineNanos = startNanos + deadlineMillis * 1_000_000L;
    }

    @Override
    boolean isRpc() {
      return true;
    }

    @Override
    int type() {
      return Frames.TYPE_RPC;
    }

    @Override
    void encode(ClientWriter out, long requestId) {
      int n = request.remaining();
      boolean inline = n <= RegionOps.COPY_WRITE_LIMIT;
      // A large request goes out from the caller's buffer: only the headers are copied.
      ByteBuf buf =
          out.begin(
              Frames.TYPE_RPC,
              requestId,
              RpcDispatcher.RPC_HEADER + n,
              RpcDispatcher.RPC_HEADER + (inline ? n : 0));
      buf.writeShortLE(service);
      buf.writeShortLE(opcode);
      // The server learns how long the caller is prepared to wait, so it can drop a call that
      // queued past it instead of doing work nobody waits for.
      long left = Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000L);
      buf.writeIntLE((int) Math.min(left, 0xffff_ffffL));
      if (inline) {
        buf.writeBytes(request.duplicate());
      } else {
        out.add(Unpooled.wrappedBuffer(request.duplicate()));
      }
    }

    @Override
    void onSuccess(ByteBuf body) {
      ByteBuffer rsp = ByteBuffer.allocate(body.readableBytes());
      body.getBytes(body.readerIndex(), rsp);
      rsp.flip();
      counters.record(OpKind.RPC, (long) request.remaining() + rsp.remaining());
      future.complete(rsp);
    }

    @Override
    void onFailure(FerriteException e) {
      counters.recordError(OpKind.RPC);
      future.completeExceptionally(e);
    }

    @Override
    String describe() {
      return "call to service " + service + " opcode " + opcode;
    }

    long deadlineMillis() {
      return deadlineMillis;
    }
  }

  // MAP    regionId i32 | pad u32 | rkey u64      [length u64 | pathLen u16 | path utf8]
  static final class Map extends FrameOp {
    final CompletableFuture<MapAnswer> future = new CompletableFuture<>();
    private final RegionRef ref;

    Map(RegionRef ref) {
      this.ref = ref;
    }

    @Override
    int type() {
      return Frames.TYPE_MAP;
    }

    @Override
    void encode(ClientWriter out, long requestId) {
      ByteBuf buf = out.begin(Frames.TYPE_MAP, requestId, 16, 16);
      buf.writeIntLE(ref.regionId());
      buf.writeIntLE(0);
      buf.writeLongLE(ref.rkey());
    }

    @Override
    void onSuccess(ByteBuf body) {
      // [length u64 | pathLen u16 | path | grant u8 | keysPathLen u16 | keysPath]; a server
      // without capabilities ends after path: its key was the owner key.
      int i = body.readerIndex();
      int n = body.readableBytes();
      int pathLen = n < 10 ? -1 : body.getUnsignedShortLE(i + 8);
      int rest = n - 10 - pathLen;
      if (pathLen < 0
          || (rest != 0 && (rest < 3 || rest != 3 + body.getUnsignedShortLE(i + n - rest + 1)))) {
        future.completeExceptionally(
            new FerriteException(ErrorCode.PROTOCOL, "malformed MAP response of " + n + " B"));
        return;
      }
      long length = body.getLongLE(i);
      String path = body.toString(i + 10, pathLen, StandardCharsets.UTF_8);
      int grant =
          rest == 0 ? MappedRegion.Grant.OWNER.ordinal() : body.getUnsignedByte(i + n - rest);
      if (grant == 0 || grant >= MappedRegion.Grant.values().length) {
        future.completeExceptionally(
            new FerriteException(ErrorCode.PROTOCOL, "MAP response grant " + grant));
        return;
      }
      String keys =
          rest == 0 ? "" : body.toString(i + n - rest + 3, rest - 3, StandardCharsets.UTF_8);
      future.complete(new MapAnswer(length, path, MappedRegion.Grant.values()[grant], keys));
    }

    @Override
    void onFailure(FerriteException e) {
      future.completeExceptionally(e);
    }

    @Override
    String describe() {
      return "MAP of " + ref;
    }
  }

  // RINGS  (empty)                                                     [pathLen u16 | path utf8]
  static final class Rings extends FrameOp {
    final CompletableFuture<String> future = new CompletableFuture<>();

    @Override
    int type() {
      return Frames.TYPE_RINGS;
    }

    @Override
    void encode(ClientWriter out, long requestId) {
      out.begin(Frames.TYPE_RINGS, requestId, 0, 0);
    }

    @Override
    void onSuccess(ByteBuf body) {
      int i = body.readerIndex();
      int n = body.readableBytes();
      if (n < 2 || n != 2 + body.getUnsignedShortLE(i)) {
        future.completeExceptionally(
            new FerriteException(ErrorCode.PROTOCOL, "malformed RINGS response of " + n + " B"));
        return;
      }
      future.complete(body.toString(i + 2, n - 2, StandardCharsets.UTF_8));
    }

    @Override
    void onFailure(FerriteException e) {
      future.completeExceptionally(e);
    }

    @Override
    String describe() {
      return "RINGS";
    }
  }

  /** A DOORBELL frame: sent, never answered, so never registered and never holding a permit. */
  static final class Doorbell implements Outbound {
    @Override
    public void sendOn(ClientWriter out) {
      out.begin(Frames.TYPE_DOORBELL, 0, 0, 0);
    }

    @Override
    public void failUnsent(FerriteException e) {
      // The connection is gone: nobody is left to wake.
    }

    @Override
    public void holdPermit(InFlight permits) {
      InFlight.release(permits);
    }
  }
}
