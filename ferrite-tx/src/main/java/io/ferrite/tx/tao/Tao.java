package io.ferrite.tx.tao;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxResult;
import io.ferrite.tx.tao.TaoLayout.Chunk;
import io.ferrite.tx.tao.TaoLayout.Entry;
import io.ferrite.tx.tao.TaoLayout.Node;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * Facebook's Tao graph store over the tx face, as FaRM builds it (FaRM §4.4): objects (graph nodes)
 * and association lists (typed edges, newest first) are tx objects; reads are lock-free one-sided
 * reads, updates are transactions. Layout: {@link TaoLayout} and docs/TAO.md.
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
 * client reads the object again for the new head. After {@link #LOCK_FREE_ATTEMPTS} such refetches
 * in one call (a list replaced faster than it can be read) the read runs as a read-only
 * transaction, which validates the object and head it read.
 *
 * <p><b>Writes</b> are transactions, retried on abort (counted in {@link #aborts}); a list's head
 * and chunks are allocated beside its object (the allocation hint), so every Tao update is a
 * single-server commit. Thread-safe.
 *
 * <p><b>Limits.</b> Object data up to {@code maxObjectData} bytes, fixed per object at {@link
 * #objAdd} to its allocation (the line-rounded size); association data up to {@code maxAssocData};
 * at most {@value TaoLayout#MAX_LISTS} association types per object. Association lists are ordered
 * by insertion (newest added first); {@code time} is stored and returned, not sorted on.
 */
public final class Tao {
  /** Lock-free attempts of one read before it falls back to a read-only transaction. */
  static final int LOCK_FREE_ATTEMPTS = 4;

  /** How long an update retries aborted transactions before it answers BUSY. */
  static final long UPDATE_PATIENCE_NANOS = 5_000_000_000L;

  /** Head pointers cached at most; the cache is emptied past this (it only saves a read). */
  static final int MAX_CACHED_HEADS = 1 << 20;

  public static final int DEFAULT_MAX_OBJECT_DATA = 512;
  public static final int DEFAULT_MAX_ASSOC_DATA = 128;

  /** The default chunk payload: 16 lines (a 1 KiB one-sided read), about 25 small entries. */
  public static final int DEFAULT_CHUNK_BYTES = ObjectLayout.capacity(16);

  /** An object as {@link #objGet} reads it. */
  public record TaoObject(FatPointer id, int otype, byte[] data) {}

  /** An association as {@link #assocRange} reads it. */
  public record Assoc(FatPointer id1, int atype, FatPointer id2, long time, byte[] data) {}

  private record HeadKey(FatPointer id1, int atype) {}

  private final TxClient tx;
  private final int maxObjectData;
  private final int maxAssocData;
  private final int chunkBytes;
  private final Map<HeadKey, FatPointer> heads = new ConcurrentHashMap<>();
  private final LongAdder aborts = new LongAdder();
  private final LongAdder refetches = new LongAdder();
  private final LongAdder fallbacks = new LongAdder();

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
    this.chunkBytes = chunkBytes;
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
    return update(
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
    Node n = readNode(id);
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
    update(
        "obj_update",
        id,
        t -> {
          Node n = txNode(t, id);
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
        update(
            "obj_delete",
            id,
            t -> {
              Node n = txNode(t, id);
              for (int i = 0; i < n.lists(); i++) {
                for (FatPointer c = n.heads()[i]; c != null; ) {
                  Chunk k = txChunk(t, c);
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
    for (int i = 0; i < deleted.lists(); i++) {
      heads.remove(new HeadKey(id, deleted.atypes()[i]));
    }
  }

  // ---------------------------------------------------------------- associations

  /**
   * Adds the association {@code (id1, atype) → id2} (assoc_add) at the head of its list, in one
   * single-server transaction: the head is rewritten; a full head is copied into a new chunk and
   * freed, and a new head takes its place in the object. {@code id2} is stored, not checked.
   *
   * @throws FerriteException NOT_FOUND for an unknown {@code id1}; TOO_LARGE over {@code
   *     maxAssocData}; INVALID_ARGUMENT for a negative type, or a fifth association type on one
   *     object; NO_SPACE when {@code id1}'s region is full
   */
  public void assocAdd(FatPointer id1, int atype, FatPointer id2, long time, byte[] data) {
    checkId("id1", id1);
    checkId("id2", id2);
    checkType("atype", atype);
    checkData("association data", data, maxAssocData, "maxAssocData");
    Entry e = new Entry(id2, time, data.clone());
    HeadKey key = new HeadKey(id1, atype);
    FatPointer head = update("assoc_add", id1, t -> addIn(t, key, e));
    cache(key, head);
  }

  /** One attempt of assoc_add in {@code t}: the list's head after it, or null to try again. */
  private FatPointer addIn(Transaction t, HeadKey key, Entry e) {
    FatPointer id1 = key.id1();
    FatPointer h = heads.get(key);
    Node node = null;
    if (h == null) {
      node = txNode(t, id1);
      h = node.head(key.atype());
    }
    if (h == null) {
      if (node.lists() == TaoLayout.MAX_LISTS) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "atype "
                + key.atype()
                + ": "
                + idString(id1)
                + " already has association lists of "
                + TaoLayout.MAX_LISTS
                + " types (the limit) "
                + Arrays.toString(Arrays.copyOf(node.atypes(), node.lists())));
      }
      FatPointer fresh = t.txAlloc(chunkBytes, id1);
      t.txWrite(fresh, chunk(true, key.atype(), 1, null, List.of(e)));
      t.txWrite(id1, withHead(id1, node, key.atype(), fresh));
      return fresh;
    }
    Chunk c;
    try {
      c = TaoLayout.decodeChunk(h, t.txRead(h));
    } catch (FerriteException stale) {
      if (stale.code() != ErrorCode.NOT_FOUND) {
        throw stale;
      }
      heads.remove(key, h); // the head was replaced (or the object deleted): read the object
      refetches.increment();
      return null;
    }
    List<Entry> entries = new ArrayList<>(c.entries().size() + 1);
    entries.add(e);
    if (c.used() + TaoLayout.entryBytes(e) <= chunkBytes - TaoLayout.CHUNK_HEADER) {
      entries.addAll(c.entries());
      t.txWrite(h, chunk(true, key.atype(), c.count() + 1, c.next(), entries));
      return h;
    }
    // FaRM §4.4: the full head is replaced, and freed so that cached pointers to it go stale.
    if (node == null) {
      node = txNode(t, id1);
    }
    if (!h.equals(node.head(key.atype()))) {
      heads.remove(key, h);
      return null;
    }
    FatPointer older = t.txAlloc(chunkBytes, id1);
    t.txWrite(older, chunk(false, key.atype(), c.count(), c.next(), c.entries()));
    FatPointer fresh = t.txAlloc(chunkBytes, id1);
    t.txWrite(fresh, chunk(true, key.atype(), c.count() + 1, older, entries));
    t.txFree(h);
    t.txWrite(id1, withHead(id1, node, key.atype(), fresh));
    return fresh;
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
    HeadKey key = new HeadKey(id1, atype);
    int[] deleted = new int[1];
    FatPointer head =
        update(
            "assoc_delete",
            id1,
            t -> {
              deleted[0] = 0;
              Node node = txNode(t, id1);
              FatPointer h = node.head(atype);
              if (h == null) {
                return id1; // nothing to delete: commits a read-only transaction
              }
              List<FatPointer> ptrs = new ArrayList<>();
              List<Chunk> chunks = new ArrayList<>();
              int lastHit = -1;
              for (FatPointer c = h; c != null; ) {
                Chunk k = txChunk(t, c);
                if (k == null) {
                  return null; // a chunk freed under us (a concurrent delete): again
                }
                ptrs.add(c);
                chunks.add(k);
                for (Entry e : k.entries()) {
                  if (e.id2().equals(id2)) {
                    lastHit = chunks.size() - 1;
                    deleted[0]++;
                  }
                }
                c = k.next();
              }
              if (lastHit < 0) {
                return id1;
              }
              // Keep the entries of chunks [0, lastHit] but the deleted ones, oldest first.
              List<Entry> kept = new ArrayList<>();
              for (int i = lastHit; i >= 0; i--) {
                List<Entry> es = chunks.get(i).entries();
                for (int j = es.size() - 1; j >= 0; j--) {
                  if (!es.get(j).id2().equals(id2)) {
                    kept.add(es.get(j));
                  }
                }
              }
              Chunk tail = lastHit + 1 < chunks.size() ? chunks.get(lastHit + 1) : null;
              FatPointer next = tail == null ? null : ptrs.get(lastHit + 1);
              long count = tail == null ? 0 : tail.count();
              // Repack oldest first; the newest chunk becomes the head (possibly empty).
              List<Entry> chunkEntries = new ArrayList<>();
              int used = 0;
              int room = chunkBytes - TaoLayout.CHUNK_HEADER;
              for (Entry e : kept) {
                if (used + TaoLayout.entryBytes(e) > room) {
                  FatPointer p = t.txAlloc(chunkBytes, id1);
                  t.txWrite(p, chunk(false, atype, count, next, newestFirst(chunkEntries)));
                  next = p;
                  chunkEntries.clear();
                  used = 0;
                }
                chunkEntries.add(e);
                used += TaoLayout.entryBytes(e);
                count++;
              }
              FatPointer fresh = t.txAlloc(chunkBytes, id1);
              t.txWrite(fresh, chunk(true, atype, count, next, newestFirst(chunkEntries)));
              for (int i = 0; i <= lastHit; i++) {
                t.txFree(ptrs.get(i));
              }
              t.txWrite(id1, withHead(id1, node, atype, fresh));
              return fresh;
            });
    if (!head.equals(id1)) {
      cache(key, head);
    }
    return deleted[0];
  }

  private static List<Entry> newestFirst(List<Entry> oldestFirst) {
    List<Entry> out = new ArrayList<>(oldestFirst);
    java.util.Collections.reverse(out);
    return out;
  }

  private byte[] chunk(boolean head, int atype, long count, FatPointer next, List<Entry> entries) {
    return TaoLayout.encodeChunk(chunkBytes, new Chunk(head, atype, count, next, entries, 0));
  }

  private static byte[] withHead(FatPointer id1, Node n, int atype, FatPointer head) {
    int[] atypes = n.atypes().clone();
    FatPointer[] hs = n.heads().clone();
    int lists = n.lists();
    int i = 0;
    while (i < lists && atypes[i] != atype) {
      i++;
    }
    if (i == lists) {
      lists++;
    }
    atypes[i] = atype;
    hs[i] = head;
    return TaoLayout.encodeNode(id1.size(), new Node(n.otype(), n.data(), atypes, hs, lists));
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
    HeadKey key = new HeadKey(id1, atype);
    for (int attempt = 0; attempt < LOCK_FREE_ATTEMPTS; attempt++) {
      Chunk head = readHead(key);
      if (head != STALE) {
        return head == null ? 0 : head.count();
      }
    }
    fallbacks.increment();
    return readInTransaction(key, t -> t.head == null ? 0L : t.head.count());
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
    HeadKey key = new HeadKey(id1, atype);
    for (int attempt = 0; attempt < LOCK_FREE_ATTEMPTS; attempt++) {
      Chunk head = readHead(key);
      if (head == null) {
        return List.of();
      }
      if (head != STALE) {
        List<Assoc> out = collect(key, head, pos, limit, tx::lockFreeRead);
        if (out != null) {
          return out;
        }
      }
    }
    fallbacks.increment();
    return readInTransaction(
        key, r -> r.head == null ? List.of() : collect(key, r.head, pos, limit, r.t::txRead));
  }

  /** Reads the range from {@code head} and older chunks: null if a chunk was freed meanwhile. */
  private static List<Assoc> collect(
      HeadKey key, Chunk head, long pos, int limit, Function<FatPointer, byte[]> read) {
    List<Assoc> out = new ArrayList<>(Math.min(limit, 64));
    long skip = pos;
    Chunk c = head;
    while (out.size() < limit) {
      if (skip >= c.entries().size()) {
        skip -= c.entries().size();
      } else {
        for (int i = (int) skip; i < c.entries().size() && out.size() < limit; i++) {
          Entry e = c.entries().get(i);
          out.add(new Assoc(key.id1(), key.atype(), e.id2(), e.time(), e.data()));
        }
        skip = 0;
      }
      if (c.next() == null || out.size() == limit) {
        break;
      }
      try {
        c = TaoLayout.decodeChunk(c.next(), read.apply(c.next()));
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        return null; // the list was deleted under the read: read its head again
      }
    }
    return out;
  }

  /** Marks a head read that found the cached (or just read) head pointer stale. */
  private static final Chunk STALE = new Chunk(true, -1, -1, null, List.of(), 0);

  /**
   * The head of {@code key}'s list by lock-free reads: null if the list is empty, {@link #STALE} if
   * the head pointer went stale (dropped from the cache: the caller reads again).
   */
  private Chunk readHead(HeadKey key) {
    FatPointer h = heads.get(key);
    if (h == null) {
      h = readNode(key.id1()).head(key.atype());
      if (h == null) {
        return null;
      }
    }
    try {
      Chunk c = TaoLayout.decodeChunk(h, tx.lockFreeRead(h));
      if (!c.head() || c.atype() != key.atype()) {
        throw new FerriteException(
            ErrorCode.INTERNAL, h + ": the head pointer of " + key + " leads to another object");
      }
      cache(key, h);
      return c;
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      heads.remove(key, h);
      refetches.increment();
      return STALE;
    }
  }

  private void cache(HeadKey key, FatPointer h) {
    if (heads.size() >= MAX_CACHED_HEADS) {
      heads.clear();
    }
    heads.put(key, h);
  }

  /** A read-only transaction's view: its transaction and the list's head (null: empty). */
  private record TxView(Transaction t, Chunk head) {}

  /** Runs {@code body} over {@code key}'s object and head read in a read-only transaction. */
  private <T> T readInTransaction(HeadKey key, Function<TxView, T> body) {
    long start = System.nanoTime();
    for (int attempt = 0; ; attempt++) {
      Transaction t = tx.txBegin();
      FatPointer h = txNode(t, key.id1()).head(key.atype()); // NOT_FOUND here: unknown id1
      T out;
      try {
        Chunk head = h == null ? null : TaoLayout.decodeChunk(h, t.txRead(h));
        out = body.apply(new TxView(t, head));
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        out = null; // a head or chunk freed under the read: the object moved on too; again
      }
      if (out != null && t.txCommit().committed()) {
        return out;
      }
      aborts.increment();
      pause(attempt, start, "a read of " + key);
    }
  }

  // ---------------------------------------------------------------- statistics

  /** Transactions this Tao aborted and ran again (updates, and reads that fell back). */
  public long aborts() {
    return aborts.sum();
  }

  /** Cached head pointers found stale (their head replaced or freed) and read again. */
  public long refetches() {
    return refetches.sum();
  }

  /** Reads that fell back from lock-free reads to a read-only transaction. */
  public long fallbacks() {
    return fallbacks.sum();
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

  /** An update: one transaction body, run again (fresh transaction) until it commits. */
  private interface Body<T> {
    /** Stages the update in {@code t}; null from an attempt that must start again. */
    T stage(Transaction t);
  }

  private <T> T update(String op, FatPointer id, Body<T> body) {
    long start = System.nanoTime();
    for (int attempt = 0; ; attempt++) {
      Transaction t = tx.txBegin();
      T out = body.stage(t);
      if (out == null) {
        pause(attempt, start, op + (id == null ? "" : " on " + idString(id)));
        continue;
      }
      TxResult r = t.txCommit();
      if (r.committed()) {
        return out;
      }
      aborts.increment();
      pause(attempt, start, op + (id == null ? "" : " on " + idString(id)) + ": " + r.detail());
    }
  }

  private static void pause(int attempt, long start, String what) {
    if (attempt > 64 && System.nanoTime() - start > UPDATE_PATIENCE_NANOS) {
      throw new FerriteException(
          ErrorCode.BUSY,
          what
              + ": aborted "
              + attempt
              + " times over "
              + UPDATE_PATIENCE_NANOS / 1_000_000
              + " ms (retryable: contention)");
    }
    if (attempt > 2) {
      LockSupport.parkNanos(
          ThreadLocalRandom.current().nextLong(1_000L << Math.min(attempt - 2, 10)));
    }
  }

  /** The object {@code id} by one lock-free read; NOT_FOUND, worded for Tao, if unknown. */
  private Node readNode(FatPointer id) {
    checkId("id", id);
    try {
      return TaoLayout.decodeNode(id, tx.lockFreeRead(id));
    } catch (FerriteException e) {
      throw e.code() == ErrorCode.NOT_FOUND ? unknown(id, e) : e;
    }
  }

  /**
   * A chunk read in {@code t}; null if it was freed (its list changed: the caller starts again).
   */
  private static Chunk txChunk(Transaction t, FatPointer c) {
    try {
      return TaoLayout.decodeChunk(c, t.txRead(c));
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      return null;
    }
  }

  private static Node txNode(Transaction t, FatPointer id) {
    try {
      return TaoLayout.decodeNode(id, t.txRead(id));
    } catch (FerriteException e) {
      throw e.code() == ErrorCode.NOT_FOUND ? unknown(id, e) : e;
    }
  }

  private static FerriteException unknown(FatPointer id, FerriteException cause) {
    return new FerriteException(
        ErrorCode.NOT_FOUND,
        "unknown Tao object id "
            + idString(id)
            + ": deleted, or never added ("
            + cause.getMessage()
            + ")",
        cause);
  }

  private static void checkId(String what, FatPointer id) {
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
