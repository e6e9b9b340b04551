package io.ferrite.tx.tao;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.tao.TaoLayout.Chunk;
import io.ferrite.tx.tao.TaoLayout.Entry;
import io.ferrite.tx.tao.TaoLayout.Node;
import java.util.List;
import java.util.Objects;

/**
 * Facebook's Tao graph store over the tx face, as FaRM builds it (FaRM §4.4): objects (graph nodes)
 * and association lists (typed edges, newest first) are tx objects; reads are lock-free one-sided
 * reads, updates are transactions. Layout: {@link TaoLayout} and docs/TAO.md; the lists' logic:
 * {@link AssocLists}; the transactions' retry loop: {@link TaoTx}.
 *
 * <p><b>Ids.</b> An object's id is its {@link FatPointer} (FaRM: "nodes are uniquely named using
 * fat pointers"), so an id maps to its object with no lookup; {@link #idString}/{@link #parseId}
 * print and parse one. An id whose object was deleted (its slot's incarnation moved on) is unknown:
 * NOT_FOUND.
 *
 * <p><b>Reads</b>, lock-free in the common case, each retried while the copy is torn or locked:
 *
 * <ul>
 *   <li>{@link #objGet}: one one-sided read of the object.
 *   <li>{@link #assocCount}: one read of the list's head through the head pointer this client
 *       caches per (id1, atype); two on a cache miss (the object for the head pointer, then the
 *       head).
 *   <li>{@link #assocRange}: the same read of the head, plus one read per older chunk the range
 *       reaches. Chunks behind the head are never written after their commit ({@link #assocDelete}
 *       copies and frees them), so the range is the list as of the head's version: one snapshot; a
 *       chunk found freed meanwhile makes the range read again.
 * </ul>
 *
 * A cached head pointer is invalidated by incarnations: a head that fills up is copied into a new
 * chunk and freed, so the cached pointer's next read finds another incarnation (NOT_FOUND), and the
 * client reads the object again for the new head. After {@link AssocLists#LOCK_FREE_ATTEMPTS} such
 * refetches in one call (a list replaced faster than it can be read) the read runs as a read-only
 * transaction, which validates the object and head it read.
 *
 * <p><b>Writes</b> are transactions, retried on abort (counted in {@link #aborts}); a list's head
 * and chunks are allocated beside its object (the allocation hint), so a Tao update is a
 * single-server commit (unless that region was full). Thread-safe.
 *
 * <p><b>Limits.</b> Object data up to {@code maxObjectData} bytes, fixed per object at {@link
 * #objAdd} to its allocation (the line-rounded size); association data up to {@code maxAssocData};
 * at most {@value TaoLayout#MAX_LISTS} association types per object. Association lists are ordered
 * by insertion (newest added first); {@code time} is stored and returned, not sorted on.
 */
public final class Tao {
  public static final int DEFAULT_MAX_OBJECT_DATA = 512;
  public static final int DEFAULT_MAX_ASSOC_DATA = 128;

  /** The default chunk payload: 16 lines (a 1 KiB one-sided read), about 25 small entries. */
  public static final int DEFAULT_CHUNK_BYTES = ObjectLayout.capacity(16);

  /** An object as {@link #objGet} reads it. */
  public record TaoObject(FatPointer id, int otype, byte[] data) {}

  /** An association as {@link #assocRange} reads it. */
  public record Assoc(FatPointer id1, int atype, FatPointer id2, long time, byte[] data) {}

  private final TxClient tx;
  private final TaoTx txs;
  private final AssocLists lists;
  private final int maxObjectData;
  private final int maxAssocData;

  /** A Tao with the default limits (512-byte objects, 128-byte associations, 880-byte chunks). */
  public Tao(TxClient tx) {
    this(tx, DEFAULT_MAX_OBJECT_DATA, DEFAULT_MAX_ASSOC_DATA, DEFAULT_CHUNK_BYTES);
  }

  /**
   * @param maxObjectData the most data bytes of one object
   * @param maxAssocData the most data bytes of one association
   * @param chunkBytes the payload bytes of one association list chunk (a head is one); it must hold
   *     at least one association of {@code maxAssocData} bytes; the server's {@code tx.object.max}
   *     must allow it
   */
  public Tao(TxClient tx, int maxObjectData, int maxAssocData, int chunkBytes) {
    this.tx = Objects.requireNonNull(tx, "tx");
    if (maxObjectData < 0 || maxAssocData < 0 || maxAssocData > 0xffff) {
      throw new IllegalArgumentException(
          "tao limits: maxObjectData "
              + maxObjectData
              + ", maxAssocData "
              + maxAssocData
              + " (expected: >= 0, maxAssocData <= 65535)");
    }
    int least = TaoLayout.CHUNK_HEADER + TaoLayout.ENTRY_HEADER + maxAssocData;
    if (chunkBytes < least || chunkBytes > TaoLayout.CHUNK_HEADER + 0xffff) {
      throw new IllegalArgumentException(
          "tao chunkBytes: "
              + chunkBytes
              + " (expected: >= "
              + least
              + " to hold one association of maxAssocData bytes, <= "
              + (TaoLayout.CHUNK_HEADER + 0xffff)
              + ")");
    }
    this.maxObjectData = maxObjectData;
    this.maxAssocData = maxAssocData;
    this.txs = new TaoTx(tx);
    this.lists = new AssocLists(txs, chunkBytes);
  }

  /** The tx client this Tao runs on. */
  public TxClient txClient() {
    return tx;
  }

  // ---------------------------------------------------------------- objects

  /**
   * Adds an object (obj_add) of type {@code otype} holding {@code data}, in this client's current
   * tx region.
   *
   * @return its id; its data capacity (what {@link #objUpdate} may write) is {@code data.length}
   *     rounded up to fill its last cache line
   * @throws FerriteException INVALID_ARGUMENT for a negative type; TOO_LARGE over {@code
   *     maxObjectData}
   */
  public FatPointer objAdd(int otype, byte[] data) {
    checkType("otype", otype);
    checkData("object data", data, maxObjectData, "maxObjectData");
    int size = ObjectLayout.capacity(ObjectLayout.lines(TaoLayout.NODE_HEADER + data.length));
    byte[] image =
        TaoLayout.encodeNode(
            size,
            new Node(
                otype,
                data.clone(),
                new int[TaoLayout.MAX_LISTS],
                new FatPointer[TaoLayout.MAX_LISTS],
                0));
    return txs.update(
        "obj_add",
        null,
        t -> {
          FatPointer p = t.txAlloc(size, null);
          t.txWrite(p, image);
          return p;
        });
  }

  /**
   * Reads an object (obj_get): one lock-free one-sided read.
   *
   * @throws FerriteException NOT_FOUND for an unknown (deleted) id; INVALID_ARGUMENT for an id of
   *     something that is not a Tao object
   */
  public TaoObject objGet(FatPointer id) {
    Node n = txs.readNode(id);
    return new TaoObject(id, n.otype(), n.data());
  }

  /**
   * Replaces an object's data (obj_update), in a transaction.
   *
   * @throws FerriteException TOO_LARGE beyond the object's capacity (fixed at {@link #objAdd}) or
   *     {@code maxObjectData}; NOT_FOUND for an unknown id
   */
  public void objUpdate(FatPointer id, byte[] data) {
    checkId("id", id);
    checkData("object data", data, maxObjectData, "maxObjectData");
    int cap = id.size() - TaoLayout.NODE_HEADER;
    if (data.length > cap) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "object data: "
              + data.length
              + " bytes for "
              + idString(id)
              + ", which holds at most "
              + cap
              + " (its capacity, fixed when it was added)");
    }
    txs.update(
        "obj_update",
        id,
        t -> {
          Node n = TaoTx.txNode(t, id);
          t.txWrite(
              id,
              TaoLayout.encodeNode(
                  id.size(), new Node(n.otype(), data.clone(), n.atypes(), n.heads(), n.lists())));
          return Boolean.TRUE;
        });
  }

  /**
   * Deletes an object and its association lists (obj_delete), in one transaction. Its id, and every
   * head pointer cached for it anywhere, then reads as unknown (NOT_FOUND).
   */
  public void objDelete(FatPointer id) {
    checkId("id", id);
    Node deleted =
        txs.update(
            "obj_delete",
            id,
            t -> {
              Node n = TaoTx.txNode(t, id);
              for (int i = 0; i < n.lists(); i++) {
                for (FatPointer c = n.heads()[i]; c != null; ) {
                  Chunk k = TaoTx.txChunk(t, c);
                  if (k == null) {
                    return null; // a chunk freed under us (a concurrent delete): again
                  }
                  FatPointer next = k.next();
                  t.txFree(c);
                  c = next;
                }
              }
              t.txFree(id);
              return n;
            });
    lists.forget(id, deleted);
  }

  // ---------------------------------------------------------------- associations

  /**
   * Adds the association {@code (id1, atype) → id2} (assoc_add) at the head of its list, in one
   * single-server transaction: the head is rewritten; a full head is copied into a new chunk and
   * freed, and a new head takes its place in the object. {@code id2} is stored, not checked.
   *
   * @throws FerriteException NOT_FOUND for an unknown {@code id1}; TOO_LARGE over {@code
   *     maxAssocData}; INVALID_ARGUMENT for a negative type, or a fifth association type on one
   *     object; NO_SPACE when no region has room (a list whose object's region is full grows in
   *     another region)
   */
  public void assocAdd(FatPointer id1, int atype, FatPointer id2, long time, byte[] data) {
    checkId("id1", id1);
    checkId("id2", id2);
    checkType("atype", atype);
    checkData("association data", data, maxAssocData, "maxAssocData");
    lists.add(id1, atype, new Entry(id2, time, data.clone()));
  }

  /**
   * Deletes every association {@code (id1, atype) → id2} (assoc_delete), in one single-server
   * transaction. Chunks are never rewritten in place (a range reads them without a transaction), so
   * the list is copied from its head down to the oldest chunk holding such an association, without
   * it, into new chunks, and the old ones are freed (cached head pointers go stale, and a range
   * that meets a freed chunk reads again). It reads the whole list to find them: its cost grows
   * with the list.
   *
   * @return how many associations it deleted (0: none; nothing written)
   * @throws FerriteException NOT_FOUND for an unknown {@code id1}
   */
  public int assocDelete(FatPointer id1, int atype, FatPointer id2) {
    checkId("id1", id1);
    checkId("id2", id2);
    checkType("atype", atype);
    return lists.delete(id1, atype, id2);
  }

  /**
   * The number of associations of type {@code atype} from {@code id1} (assoc_count): one lock-free
   * read of the list's head with a cached head pointer, two without.
   *
   * @throws FerriteException NOT_FOUND for an unknown {@code id1}
   */
  public long assocCount(FatPointer id1, int atype) {
    checkId("id1", id1);
    checkType("atype", atype);
    return lists.count(id1, atype);
  }

  /**
   * Up to {@code limit} associations of type {@code atype} from {@code id1}, newest first, skipping
   * the {@code pos} newest (assoc_range): one lock-free read of the head (as {@link #assocCount}),
   * plus one per older chunk the range reaches. The result is the list as of one instant.
   *
   * @throws FerriteException NOT_FOUND for an unknown {@code id1}; INVALID_ARGUMENT for a negative
   *     {@code pos} or {@code limit}
   */
  public List<Assoc> assocRange(FatPointer id1, int atype, long pos, int limit) {
    checkId("id1", id1);
    checkType("atype", atype);
    if (pos < 0 || limit < 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "assoc_range: pos " + pos + ", limit " + limit + " (expected: both >= 0)");
    }
    return lists.range(id1, atype, pos, limit);
  }

  // ---------------------------------------------------------------- statistics

  /** Transactions this Tao aborted and ran again (updates, and reads that fell back). */
  public long aborts() {
    return txs.aborts.sum();
  }

  /** Cached head pointers found stale (their head replaced or freed) and read again. */
  public long refetches() {
    return txs.refetches.sum();
  }

  /** Reads that fell back from lock-free reads to a read-only transaction. */
  public long fallbacks() {
    return txs.fallbacks.sum();
  }

  // ---------------------------------------------------------------- ids

  /** {@code id} as {@code region:offset:size:incarnation}, which {@link #parseId} reads. */
  public static String idString(FatPointer id) {
    return id.region() + ":" + id.offset() + ":" + id.size() + ":" + id.incarnation();
  }

  /**
   * Parses an id printed by {@link #idString}.
   *
   * @throws FerriteException INVALID_ARGUMENT naming the text if it is not one
   */
  public static FatPointer parseId(String s) {
    String[] f = s.split(":", -1);
    try {
      if (f.length == 4) {
        return new FatPointer(
            Integer.parseInt(f[0]),
            Long.parseLong(f[1]),
            Integer.parseInt(f[2]),
            Long.parseLong(f[3]));
      }
    } catch (IllegalArgumentException e) {
      // reported below
    }
    throw new FerriteException(
        ErrorCode.INVALID_ARGUMENT,
        "tao id: \"" + s + "\" (expected: region:offset:size:incarnation, e.g. 3:4096:128:1)");
  }

  // ---------------------------------------------------------------- internals

  static void checkId(String what, FatPointer id) {
    if (id == null) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, what + ": null (expected: a Tao id)");
    }
  }

  private static void checkType(String what, int type) {
    if (type < 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, what + ": " + type + " (expected: >= 0)");
    }
  }

  private static void checkData(String what, byte[] data, int max, String limit) {
    if (data == null) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, what + ": null (expected: bytes)");
    }
    if (data.length > max) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          what + ": " + data.length + " bytes (limit: " + max + ", this Tao's " + limit + ")");
    }
  }
}
