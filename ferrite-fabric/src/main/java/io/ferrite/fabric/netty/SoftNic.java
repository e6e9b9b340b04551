package io.ferrite.fabric.netty;

import io.ferrite.fabric.Access;
import io.ferrite.fabric.BlockKeys;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionTable;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The "soft NIC": serves one-sided ops on the I/O thread that decoded them, like an RDMA NIC serves
 * READ/WRITE/ATOMIC verbs without the host CPU's application code. Each op is decode, region
 * lookup, {@link MappedRegion#check}, copy, reply; the only allocations are pooled response buffers
 * (and, for large reads, a wrapper around the region's own memory).
 *
 * <p>Bodies reach here with their length already checked against the op's layout by {@link
 * ServerHandler#onHeader}. Small responses are appended to the connection's {@link ResponseBuffer},
 * large read bodies written as buffers of their own; nothing is flushed here: the handler writes
 * and flushes once per read burst.
 */
final class SoftNic {
  /** Reads up to this size are copied into the response; larger ones are sent from the region. */
  static final int COPY_READ_LIMIT = 4096;

  private final RegionTable regions;
  private final Counters counters;
  private final boolean serveMap;
  private final int maxPayload;

  SoftNic(RegionTable regions, Counters counters, boolean serveMap, int maxFrameBytes) {
    this.regions = regions;
    this.counters = counters;
    this.serveMap = serveMap;
    this.maxPayload = maxFrameBytes - Frames.HEADER_AFTER_LENGTH;
  }

  // READ   regionId i32 | pad u32 | rkey u64 | offset u64 | length u32        [data]
  void read(ResponseBuffer out, long requestId, ByteBuf body) {
    int i = body.readerIndex();
    int regionId = body.getIntLE(i);
    long rkey = body.getLongLE(i + 8);
    long offset = body.getLongLE(i + 16);
    long len = body.getUnsignedIntLE(i + 24);
    if (len > maxPayload) {
      error(
          out,
          Frames.TYPE_READ,
          requestId,
          OpKind.READ,
          ErrorCode.TOO_LARGE,
          "read length: " + len + " (expected: <= " + maxPayload + " per frame)");
      return;
    }
    MappedRegion region = region(out, Frames.TYPE_READ, requestId, OpKind.READ, regionId);
    if (region == null
        || !check(
            out,
            Frames.TYPE_READ,
            requestId,
            OpKind.READ,
            region,
            rkey,
            offset,
            len,
            Access.READ)) {
      return;
    }
    int n = (int) len;
    if (n <= COPY_READ_LIMIT) {
      ByteBuf rsp = out.room(Frames.HEADER + n);
      Wire.writeResponseHeader(rsp, Frames.TYPE_READ, requestId, n);
      copyOut(region, offset, rsp, n);
    } else {
      // No copy by this process: the kernel copies the bytes straight from the region's mapping
      // into the socket when it sends. Like an RDMA READ, what goes out is whatever the memory
      // holds at send time. (sendfile from the region file was measured too: over loopback its
      // page-by-page splice cost the server as much as the copy, and the client's copy from the
      // cold file pages cost more than one from the just-written socket buffer.)
      Wire.writeResponseHeader(out.room(Frames.HEADER), Frames.TYPE_READ, requestId, n);
      // The duplicate refers to the mapped buffer, so a released region stays mapped until the
      // send is done and the wrapper collected.
      ByteBuffer slice = region.buffer().byteBuffer().duplicate();
      slice.limit((int) offset + n).position((int) offset);
      out.writeSeparately(Unpooled.wrappedBuffer(slice));
    }
    counters.record(OpKind.READ, n);
  }

  // WRITE  regionId i32 | pad u32 | rkey u64 | offset u64 | data ...          [empty]
  void write(ResponseBuffer out, long requestId, ByteBuf body) {
    int i = body.readerIndex();
    int regionId = body.getIntLE(i);
    long rkey = body.getLongLE(i + 8);
    long offset = body.getLongLE(i + 16);
    int n = body.readableBytes() - Frames.REGION_OP_HEADER;
    MappedRegion region = region(out, Frames.TYPE_WRITE, requestId, OpKind.WRITE, regionId);
    if (region == null
        || !check(
            out,
            Frames.TYPE_WRITE,
            requestId,
            OpKind.WRITE,
            region,
            rkey,
            offset,
            n,
            Access.WRITE)) {
      return;
    }
    copyIn(body, i + Frames.REGION_OP_HEADER, region, offset, n);
    Wire.writeResponseHeader(out.room(Frames.HEADER), Frames.TYPE_WRITE, requestId, 0);
    counters.record(OpKind.WRITE, n);
  }

  // CAS    regionId i32 | pad u32 | rkey u64 | offset u64 | expect u64 | update u64   [previous]
  // FAA    regionId i32 | pad u32 | rkey u64 | offset u64 | delta u64                 [previous]
  void atomic(ResponseBuffer out, int type, long requestId, ByteBuf body) {
    OpKind kind = type == Frames.TYPE_CAS ? OpKind.COMPARE_AND_SWAP : OpKind.FETCH_AND_ADD;
    int i = body.readerIndex();
    int regionId = body.getIntLE(i);
    long rkey = body.getLongLE(i + 8);
    long offset = body.getLongLE(i + 16);
    MappedRegion region = region(out, type, requestId, kind, regionId);
    if (region == null
        || !check(out, type, requestId, kind, region, rkey, offset, 8, Access.ATOMIC)) {
      return;
    }
    long previous =
        type == Frames.TYPE_CAS
            ? region.compareAndSwap(offset, body.getLongLE(i + 24), body.getLongLE(i + 32))
            : region.fetchAndAdd(offset, body.getLongLE(i + 24));
    ByteBuf rsp = out.room(Frames.HEADER + 8);
    Wire.writeResponseHeader(rsp, type, requestId, 8);
    rsp.writeLongLE(previous);
    counters.record(kind, 8);
  }

  // MAP    regionId i32 | pad u32 | rkey u64
  //        [length u64 | pathLen u16 | path utf8 | grant u8 | keysPathLen u16 | keysPath utf8]
  //
  // The key must grant something somewhere in the region (MappedRegion#grantOf): the owner key,
  // the read key, or a live block key. The client then checks every op itself, against the
  // grant for a region-wide key and against the block key table (keysPath, "" if none) for a
  // block key, so a revocation reaches it at its next op. See docs/SECURITY.md for what a
  // same-host client can reach regardless.
  void map(ResponseBuffer out, long requestId, ByteBuf body) {
    if (!serveMap) {
      writeError(
          out,
          Frames.TYPE_MAP,
          requestId,
          ErrorCode.UNSUPPORTED,
          "MAP is served only to same-host (shm) clients");
      return;
    }
    int i = body.readerIndex();
    int regionId = body.getIntLE(i);
    long rkey = body.getLongLE(i + 8);
    MappedRegion region = regions.get(regionId);
    if (region == null || region.isClosed()) {
      writeError(
          out, Frames.TYPE_MAP, requestId, ErrorCode.NO_SUCH_REGION, "no region " + regionId);
      return;
    }
    MappedRegion.Grant grant = region.grantOf(rkey);
    if (grant == MappedRegion.Grant.NONE) {
      writeError(
          out,
          Frames.TYPE_MAP,
          requestId,
          ErrorCode.BAD_RKEY,
          "no valid key for any byte of region " + regionId);
      return;
    }
    byte[] path = region.file().toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8);
    BlockKeys keys = region.blockKeys();
    byte[] keysPath =
        keys == null
            ? new byte[0]
            : keys.file().toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8);
    if (path.length > 0xffff || keysPath.length > 0xffff) {
      writeError(
          out, Frames.TYPE_MAP, requestId, ErrorCode.INTERNAL, "region file path is too long");
      return;
    }
    int n = 10 + path.length + 3 + keysPath.length;
    ByteBuf rsp = out.room(Frames.HEADER + n);
    Wire.writeResponseHeader(rsp, Frames.TYPE_MAP, requestId, n);
    rsp.writeLongLE(region.length());
    rsp.writeShortLE(path.length);
    rsp.writeBytes(path);
    rsp.writeByte(grant.ordinal());
    rsp.writeShortLE(keysPath.length);
    rsp.writeBytes(keysPath);
  }

  private MappedRegion region(
      ResponseBuffer out, int type, long requestId, OpKind kind, int regionId) {
    MappedRegion region = regions.get(regionId);
    if (region == null) {
      error(out, type, requestId, kind, ErrorCode.NO_SUCH_REGION, "no region " + regionId);
    }
    return region;
  }

  private boolean check(
      ResponseBuffer out,
      int type,
      long requestId,
      OpKind kind,
      MappedRegion region,
      long rkey,
      long offset,
      long len,
      Access access) {
    ErrorCode code = region.check(rkey, offset, len, access);
    if (code == ErrorCode.OK) {
      return true;
    }
    error(out, type, requestId, kind, code, region.describe(code, offset, len));
    return false;
  }

  private void error(
      ResponseBuffer out, int type, long requestId, OpKind kind, ErrorCode code, String message) {
    counters.recordError(kind);
    writeError(out, type, requestId, code, message);
  }

  private static void writeError(
      ResponseBuffer out, int type, long requestId, ErrorCode code, String message) {
    byte[] msg = Wire.truncatedUtf8(message);
    Wire.writeError(out.room(Frames.HEADER + msg.length), type, requestId, code, msg);
  }

  /** Region to response buffer; bounds were checked by {@link MappedRegion#check}. */
  private static void copyOut(MappedRegion region, long offset, ByteBuf dst, int n) {
    if (n == 0) {
      return;
    }
    if (dst.hasMemoryAddress()) {
      PlatformDependent.copyMemory(
          region.buffer().addressOffset() + offset, dst.memoryAddress() + dst.writerIndex(), n);
      // A released region is unmapped by the JVM once unreachable: keep it reachable until here.
      java.lang.ref.Reference.reachabilityFence(region);
      dst.writerIndex(dst.writerIndex() + n);
    } else {
      ByteBuffer src = region.buffer().byteBuffer().duplicate();
      src.limit((int) offset + n).position((int) offset);
      dst.writeBytes(src);
    }
  }

  /** Request body to region; bounds were checked by {@link MappedRegion#check}. */
  private static void copyIn(ByteBuf src, int index, MappedRegion region, long offset, int n) {
    if (n == 0) {
      return;
    }
    if (src.hasMemoryAddress()) {
      PlatformDependent.copyMemory(
          src.memoryAddress() + index, region.buffer().addressOffset() + offset, n);
      java.lang.ref.Reference.reachabilityFence(region);
    } else {
      ByteBuffer dst = region.buffer().byteBuffer().duplicate();
      dst.limit((int) offset + n).position((int) offset);
      src.getBytes(index, dst);
    }
  }
}
