package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The bounded searches {@link TreeService} runs inline on an I/O thread ({@link
 * TreeService#INLINE_RETRIES}): a node a writer holds half written (locked, both version words odd)
 * is never used; the search gives up with {@code BUSY}, which the service turns into declining the
 * request to a service thread, instead of answering from the half-written node or waiting on the
 * I/O thread. Once the write ends, the same search answers.
 */
class InlineSearchTest extends MeganodeFixture {
  static final int NODE = 512;

  static byte[] key(int i) {
    return ("key-" + i).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aNodeHalfWrittenIsNotReadInlineButDeclinedThenReadWhole() {
    ExtentAllocator extents = extents(4);
    Meganode m = new Meganode(region(64L * NODE), NODE, extents);
    for (int i = 0; i < 5; i++) {
      m.put(key(i), key(i));
    }
    // Five keys: the local root is the one leaf, node header.right.
    int leaf = new MeganodeReader(m.source()).header().right;
    Node whole = Node.decodeBody(m.nodes.copy(leaf));
    assertEquals(5, whole.keys.size(), "one leaf holds the keys");

    // A writer in the middle of its write: the lock taken (both words odd), the body rewritten
    // without the keys, the unlock not yet done. The copy's words agree (both odd): only the odd
    // test keeps a reader from taking this body, in which key-3 is absent.
    long odd = m.nodes.lock(leaf);
    Node emptied = Node.decodeBody(m.nodes.copy(leaf));
    emptied.keys.clear();
    emptied.values.clear();
    emptied.version = odd;
    byte[] image = new byte[NODE];
    emptied.encode(image);
    m.nodes.region().writeFrom((long) leaf * NODE + 8, ByteBuffer.wrap(image, 8, NODE - 16));

    FerriteException busy =
        assertThrows(
            FerriteException.class,
            () -> m.search(key(3), TreeService.INLINE_RETRIES),
            "an inline search gives up on a node held by a writer");
    assertEquals(ErrorCode.BUSY, busy.code());
    FerriteException scanBusy =
        assertThrows(
            FerriteException.class,
            () -> m.scanPart(new byte[0], null, 100, TreeService.INLINE_RETRIES),
            "an inline scan gives up too");
    assertEquals(ErrorCode.BUSY, scanBusy.code());

    // The write ends (here: the old body back); the search, as a service thread would run it
    // again, answers from the whole node.
    m.nodes.write(leaf, whole, odd);
    MeganodeReader.Outcome o = m.search(key(3), TreeService.INLINE_RETRIES);
    assertEquals(MeganodeReader.Outcome.Kind.VALUE, o.kind());
    assertArrayEquals(key(3), o.value());
    assertEquals(5, m.scanPart(new byte[0], null, 100, TreeService.INLINE_RETRIES).pairs().size());
  }
}
