package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.NettyLeakExtension;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The frame splitter on its own, fed through an {@link EmbeddedChannel} in pieces cut at seeded
 * random points, including inside the length field and the header: every frame comes out whole, in
 * order, with the right body, whichever way its body was taken; bad lengths close the channel; no
 * buffer leaks.
 */
@ExtendWith(NettyLeakExtension.class)
class FrameReaderTest {
  private final long seed = Long.getLong("tests.seed", System.nanoTime());
  private final Random random = new Random(seed);

  /** Records frames; bodies of type 2 are streamed, type 3 discarded, others aggregated. */
  private static class Recorder extends FrameReader {
    final List<String> frames = new ArrayList<>();
    String closedFor;
    private StringBuilder streamed;

    Recorder(int max) {
      super(max);
    }

    @Override
    protected int onHeader(
        ChannelHandlerContext ctx, int type, int flags, int status, long id, int len) {
      if (type == 2) {
        streamed = new StringBuilder();
        return STREAM;
      }
      if (type == 9) {
        throw new BadFrameException("type 9 is refused");
      }
      return type == 3 ? DISCARD : AGGREGATE;
    }

    @Override
    protected void onFrame(
        ChannelHandlerContext ctx, int type, int flags, int status, long id, ByteBuf body) {
      frames.add(type + "/" + flags + "/" + status + "/" + id + ":" + ByteBufUtil.hexDump(body));
    }

    @Override
    protected void onBodyChunk(ChannelHandlerContext ctx, ByteBuf in, int n, boolean last) {
      streamed.append(ByteBufUtil.hexDump(in, in.readerIndex(), n));
      if (last) {
        frames.add("2/0/0/s:" + streamed);
      }
    }

    @Override
    protected void badFrame(ChannelHandlerContext ctx, String reason) {
      closedFor = reason;
      ctx.close();
    }
  }

  private String where() {
    return "seed " + seed + " (replay with -Dtests.seed=" + seed + ")";
  }

  private static byte[] frame(int type, int flags, int status, long id, byte[] body) {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.heapBuffer();
    try {
      Wire.writeHeader(b, body.length, type, flags, status, id);
      b.writeBytes(body);
      return ByteBufUtil.getBytes(b);
    } finally {
      b.release();
    }
  }

  @Test
  void framesSurviveAnySplitting() {
    for (int trial = 0; trial < 100; trial++) {
      List<String> expected = new ArrayList<>();
      ByteBuf stream = PooledByteBufAllocator.DEFAULT.heapBuffer();
      try {
        int n = 1 + random.nextInt(8);
        for (int i = 0; i < n; i++) {
          int type = 1 + random.nextInt(3);
          byte[] body = new byte[random.nextInt(5) == 0 ? 0 : random.nextInt(3000)];
          random.nextBytes(body);
          int flags = random.nextInt(2);
          int status = random.nextInt(3);
          long id = random.nextLong();
          stream.writeBytes(frame(type, flags, status, id, body));
          String hex = ByteBufUtil.hexDump(body);
          if (type == 1) {
            expected.add(type + "/" + flags + "/" + status + "/" + id + ":" + hex);
          } else if (type == 2) {
            expected.add("2/0/0/s:" + hex);
          }
        }
        Recorder r = new Recorder(64 << 10);
        EmbeddedChannel ch = new EmbeddedChannel(r);
        byte[] all = ByteBufUtil.getBytes(stream);
        int at = 0;
        while (at < all.length) {
          int piece =
              Math.min(all.length - at, random.nextInt(4) == 0 ? 1 : 1 + random.nextInt(700));
          ByteBuf b = ch.alloc().directBuffer(piece);
          b.writeBytes(all, at, piece);
          ch.writeInbound(b);
          at += piece;
        }
        assertNull(r.closedFor, where());
        assertEquals(expected, r.frames, where() + ", trial " + trial);
        assertFalse(ch.finish());
      } finally {
        stream.release();
      }
    }
  }

  @Test
  void badLengthsCloseAsSoonAsTheLengthIsKnown() {
    for (long len : new long[] {0, 11, 4097, 0xffff_ffffL}) {
      Recorder r = new Recorder(4096);
      EmbeddedChannel ch = new EmbeddedChannel(r);
      ByteBuf b = ch.alloc().buffer(4);
      b.writeIntLE((int) len);
      b.writeLong(1); // whatever follows in the same read is ignored (and released)
      ch.writeInbound(b);
      assertTrue(r.closedFor != null && r.closedFor.contains("frame length " + len), r.closedFor);
      assertFalse(ch.isActive());
      assertTrue(r.frames.isEmpty());
      ch.finishAndReleaseAll();
    }
  }

  @Test
  void aRefusedFrameMidGatherReleasesWhatWasGathered() {
    Recorder r = new Recorder(64 << 10);
    EmbeddedChannel ch = new EmbeddedChannel(r);
    byte[] ok = frame(1, 0, 0, 1, new byte[5000]);
    ByteBuf first = ch.alloc().buffer();
    first.writeBytes(ok, 0, 3000);
    ch.writeInbound(first);
    // The channel dies with half a frame gathered.
    ch.close();
    ch.finishAndReleaseAll();
    assertTrue(r.frames.isEmpty());
    Recorder r2 = new Recorder(64 << 10);
    EmbeddedChannel ch2 = new EmbeddedChannel(r2);
    ByteBuf bad = ch2.alloc().buffer();
    bad.writeBytes(frame(9, 0, 0, 1, new byte[10]));
    ch2.writeInbound(bad);
    assertEquals("type 9 is refused", r2.closedFor);
    ch2.finishAndReleaseAll();
  }

  @Test
  void aWholeBodyIsHandedOutWithoutACopy() {
    byte[] body = new byte[100];
    random.nextBytes(body);
    List<ByteBuf> seen = new ArrayList<>();
    FrameReader r =
        new Recorder(4096) {
          @Override
          protected void onFrame(
              ChannelHandlerContext ctx, int type, int flags, int status, long id, ByteBuf b) {
            seen.add(b.unwrap());
            assertArrayEquals(body, ByteBufUtil.getBytes(b));
          }
        };
    EmbeddedChannel ch = new EmbeddedChannel(r);
    ByteBuf in = ch.alloc().buffer();
    in.writeBytes(frame(1, 0, 0, 7, body));
    ch.writeInbound(in);
    assertEquals(1, seen.size());
    assertTrue(seen.get(0) != null, "the body should be a slice of the read buffer");
    ch.finishAndReleaseAll();
  }
}
