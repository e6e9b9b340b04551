package io.ferrite.tx.tao;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The payloads of Tao's tx objects (docs/TAO.md draws them): nodes (objects) and association list
 * chunks, the newest of which is the list's head. All little-endian.
 *
 * <pre>
 *  node     0       4       8         12       16                          128
 *           +-------+-------+---------+--------+---------------------------+------------------+
 *           | TAON  | otype | dataLen | nLists | 4 x (atype i32, head fp)  | data [0, dataCap)|
 *           +-------+-------+---------+--------+---------------------------+------------------+
 *  chunk    0       4       8         16                 40      42      44
 *           +-------+-------+---------+------------------+-------+-------+---------------------+
 *           | TAOH/C| atype | count   | next (older) fp  | n     | used  | entries, newest 1st |
 *           +-------+-------+---------+------------------+-------+-------+---------------------+
 *  entry    id2 fp (24) | time i64 | dataLen u16 | data
 *  fp       region i32 (-1: none) | offset i64 | size i32 | incarnation i64   (24 bytes)
 * </pre>
 *
 * A head's {@code count} is the whole list's length; a chunk's is its entries and all older ones.
 * Chunks other than the head are never written after their commit (a full head is copied into a new
 * chunk and freed), so a range read from a verified head through older chunks is one snapshot.
 */
final class TaoLayout {
  static final int NODE_MAGIC = 0x4e4f4154; // "TAON"
  static final int HEAD_MAGIC = 0x484f4154; // "TAOH"
  static final int CHUNK_MAGIC = 0x434f4154; // "TAOC"

  static final int FP = 24;
  static final int MAX_LISTS = 4;
  static final int SLOT = 4 + FP;
  static final int NODE_HEADER = 16 + MAX_LISTS * SLOT;
  static final int CHUNK_HEADER = 44;
  static final int ENTRY_HEADER = FP + 8 + 2;

  private TaoLayout() {}

  /** A decoded node. {@code heads[i]} is null for an unused slot. */
  record Node(int otype, byte[] data, int[] atypes, FatPointer[] heads, int lists) {
    FatPointer head(int atype) {
      for (int i = 0; i < lists; i++) {
        if (atypes[i] == atype) {
          return heads[i];
        }
      }
      return null;
    }
  }

  /** An association: the edge (id1, atype) → id2 at {@code time} with {@code data}. */
  record Entry(FatPointer id2, long time, byte[] data) {}

  /** A decoded chunk (or head). Entries newest first. */
  record Chunk(
      boolean head, int atype, long count, FatPointer next, List<Entry> entries, int used) {}

  static ByteBuffer le(byte[] b) {
    return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
  }

  static void putFp(ByteBuffer b, int at, FatPointer p) {
    if (p == null) {
      b.putInt(at, -1).putLong(at + 4, 0).putInt(at + 12, 0).putLong(at + 16, 0);
    } else {
      b.putInt(at, p.region())
          .putLong(at + 4, p.offset())
          .putInt(at + 12, p.size())
          .putLong(at + 16, p.incarnation());
    }
  }

  static FatPointer getFp(ByteBuffer b, int at) {
    int region = b.getInt(at);
    if (region < 0) {
      return null;
    }
    return new FatPointer(region, b.getLong(at + 4), b.getInt(at + 12), b.getLong(at + 16));
  }

  static byte[] encodeNode(int size, Node n) {
    byte[] out = new byte[size];
    ByteBuffer b = le(out);
    b.putInt(0, NODE_MAGIC).putInt(4, n.otype()).putInt(8, n.data().length).putInt(12, n.lists());
    for (int i = 0; i < MAX_LISTS; i++) {
      int at = 16 + i * SLOT;
      b.putInt(at, i < n.lists() ? n.atypes()[i] : 0);
      putFp(b, at + 4, i < n.lists() ? n.heads()[i] : null);
    }
    b.put(NODE_HEADER, n.data());
    return out;
  }

  static Node decodeNode(FatPointer id, byte[] payload) {
    ByteBuffer b = le(payload);
    if (payload.length < NODE_HEADER || b.getInt(0) != NODE_MAGIC) {
      throw notA(id, "Tao object", payload);
    }
    int len = b.getInt(8);
    int lists = b.getInt(12);
    if (len < 0 || len > payload.length - NODE_HEADER || lists < 0 || lists > MAX_LISTS) {
      throw new FerriteException(ErrorCode.PROTOCOL, id + ": a corrupt Tao object header");
    }
    int[] atypes = new int[MAX_LISTS];
    FatPointer[] heads = new FatPointer[MAX_LISTS];
    for (int i = 0; i < lists; i++) {
      int at = 16 + i * SLOT;
      atypes[i] = b.getInt(at);
      heads[i] = getFp(b, at + 4);
    }
    byte[] data = new byte[len];
    b.get(NODE_HEADER, data);
    return new Node(b.getInt(4), data, atypes, heads, lists);
  }

  static int entryBytes(Entry e) {
    return ENTRY_HEADER + e.data().length;
  }

  static byte[] encodeChunk(int size, Chunk c) {
    byte[] out = new byte[size];
    ByteBuffer b = le(out);
    b.putInt(0, c.head() ? HEAD_MAGIC : CHUNK_MAGIC).putInt(4, c.atype()).putLong(8, c.count());
    putFp(b, 16, c.next());
    int at = CHUNK_HEADER;
    for (Entry e : c.entries()) {
      putFp(b, at, e.id2());
      b.putLong(at + FP, e.time()).putShort(at + FP + 8, (short) e.data().length);
      b.put(at + ENTRY_HEADER, e.data());
      at += entryBytes(e);
    }
    b.putShort(40, (short) c.entries().size()).putShort(42, (short) (at - CHUNK_HEADER));
    return out;
  }

  static Chunk decodeChunk(FatPointer p, byte[] payload) {
    ByteBuffer b = le(payload);
    int magic = payload.length < CHUNK_HEADER ? 0 : b.getInt(0);
    if (magic != HEAD_MAGIC && magic != CHUNK_MAGIC) {
      throw notA(p, "Tao association list", payload);
    }
    int n = Short.toUnsignedInt(b.getShort(40));
    List<Entry> entries = new ArrayList<>(n);
    int at = CHUNK_HEADER;
    for (int i = 0; i < n; i++) {
      if (at + ENTRY_HEADER > payload.length) {
        throw new FerriteException(ErrorCode.PROTOCOL, p + ": a corrupt Tao association chunk");
      }
      FatPointer id2 = getFp(b, at);
      long time = b.getLong(at + FP);
      int len = Short.toUnsignedInt(b.getShort(at + FP + 8));
      byte[] data = new byte[len];
      b.get(at + ENTRY_HEADER, data);
      entries.add(new Entry(id2, time, data));
      at += ENTRY_HEADER + len;
    }
    return new Chunk(
        magic == HEAD_MAGIC, b.getInt(4), b.getLong(8), getFp(b, 16), entries, at - CHUNK_HEADER);
  }

  private static FerriteException notA(FatPointer p, String what, byte[] payload) {
    String is =
        payload.length < 4
            ? "too small"
            : switch (le(payload).getInt(0)) {
              case NODE_MAGIC -> "a Tao object";
              case HEAD_MAGIC, CHUNK_MAGIC -> "a Tao association list";
              default -> "not a Tao structure";
            };
    return new FerriteException(
        ErrorCode.INVALID_ARGUMENT, p + " is not a " + what + " (it is " + is + ")");
  }
}
