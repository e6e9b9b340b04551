package io.ferrite.tx.tao;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.tao.TaoLayout.Chunk;
import io.ferrite.tx.tao.TaoLayout.Entry;
import io.ferrite.tx.tao.TaoLayout.Node;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Tao's association lists (FaRM §4.4): adds, deletes and the lock-free reads of counts and ranges,
 * with the head pointers this client caches per (id1, atype). {@link Tao} checks the arguments and
 * documents each operation; {@link TaoLayout} draws the chunks. Thread-safe.
 */
final class AssocLists {
  /** Lock-free attempts of one read before it falls back to a read-only transaction. */
  static final int LOCK_FREE_ATTEMPTS = 4;

  /** Head pointers cached at most; the cache is emptied past this (it only saves a read). */
  static final int MAX_CACHED_HEADS = 1 << 20;

  private record HeadKey(FatPointer id1, int atype) {}

  private final TaoTx txs;
  private final TxClient tx;
  private final int chunkBytes;
  private final Map<HeadKey, FatPointer> heads = new ConcurrentHashMap<>();

  AssocLists(TaoTx txs, int chunkBytes) {
    this.txs = txs;
    this.tx = txs.tx;
    this.chunkBytes = chunkBytes;
  }

  /** Forgets the head pointers cached for {@code id}, deleted with its lists {@code n}. */
  void forget(FatPointer id, Node n) {
    for (int i = 0; i < n.lists(); i++) {
      heads.remove(new HeadKey(id, n.atypes()[i]));
    }
  }

  /**
   * A chunk for {@code id1}'s list: beside {@code id1} (its region, so the list's updates stay
   * single-server commits), or, when that region is full, wherever this client allocates (a list
   * keeps growing; its updates become two-server commits).
   */
  private FatPointer allocNear(Transaction t, FatPointer id1) {
    try {
      return t.txAlloc(chunkBytes, id1);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NO_SPACE) {
        throw e;
      }
      return t.txAlloc(chunkBytes, null);
    }
  }

  /** assoc_add ({@link Tao#assocAdd}). */
  void add(FatPointer id1, int atype, Entry e) {
    HeadKey key = new HeadKey(id1, atype);
    FatPointer head = txs.update("assoc_add", id1, t -> addIn(t, key, e));
    cache(key, head);
  }

  /** assoc_delete ({@link Tao#assocDelete}). */
  int delete(FatPointer id1, int atype, FatPointer id2) {
    HeadKey key = new HeadKey(id1, atype);
    int[] deleted = new int[1];
    FatPointer head =
        txs.update(
            "assoc_delete",
            id1,
            t -> {
              deleted[0] = 0;
              Node node = TaoTx.txNode(t, id1);
              FatPointer h = node.head(atype);
              if (h == null) {
                return id1; // nothing to delete: commits a read-only transaction
              }
              List<FatPointer> ptrs = new ArrayList<>();
              List<Chunk> chunks = new ArrayList<>();
              int lastHit = -1;
              for (FatPointer c = h; c != null; ) {
                Chunk k = TaoTx.txChunk(t, c);
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
                  FatPointer p = allocNear(t, id1);
                  t.txWrite(p, chunk(false, atype, count, next, newestFirst(chunkEntries)));
                  next = p;
                  chunkEntries.clear();
                  used = 0;
                }
                chunkEntries.add(e);
                used += TaoLayout.entryBytes(e);
                count++;
              }
              FatPointer fresh = allocNear(t, id1);
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

  /** assoc_count ({@link Tao#assocCount}). */
  long count(FatPointer id1, int atype) {
    HeadKey key = new HeadKey(id1, atype);
    for (int attempt = 0; attempt < LOCK_FREE_ATTEMPTS; attempt++) {
      Chunk head = readHead(key);
      if (head != STALE) {
        return head == null ? 0 : head.count();
      }
    }
    txs.fallbacks.increment();
    return readInTransaction(key, t -> t.head == null ? 0L : t.head.count());
  }

  /** assoc_range ({@link Tao#assocRange}). */
  List<Tao.Assoc> range(FatPointer id1, int atype, long pos, int limit) {
    HeadKey key = new HeadKey(id1, atype);
    for (int attempt = 0; attempt < LOCK_FREE_ATTEMPTS; attempt++) {
      Chunk head = readHead(key);
      if (head == null) {
        return List.of();
      }
      if (head != STALE) {
        List<Tao.Assoc> out = collect(key, head, pos, limit, tx::lockFreeRead);
        if (out != null) {
          return out;
        }
      }
    }
    txs.fallbacks.increment();
    return readInTransaction(
        key, r -> r.head == null ? List.of() : collect(key, r.head, pos, limit, r.t::txRead));
  }

  /** One attempt of assoc_add in {@code t}: the list's head after it, or null to try again. */
  private FatPointer addIn(Transaction t, HeadKey key, Entry e) {
    FatPointer id1 = key.id1();
    FatPointer h = heads.get(key);
    Node node = null;
    if (h == null) {
      node = TaoTx.txNode(t, id1);
      h = node.head(key.atype());
    }
    if (h == null) {
      if (node.lists() == TaoLayout.MAX_LISTS) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "atype "
                + key.atype()
                + ": "
                + Tao.idString(id1)
                + " already has association lists of "
                + TaoLayout.MAX_LISTS
                + " types (the limit) "
                + Arrays.toString(Arrays.copyOf(node.atypes(), node.lists())));
      }
      FatPointer fresh = allocNear(t, id1);
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
      txs.refetches.increment();
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
      node = TaoTx.txNode(t, id1);
    }
    if (!h.equals(node.head(key.atype()))) {
      heads.remove(key, h);
      return null;
    }
    FatPointer older = allocNear(t, id1);
    t.txWrite(older, chunk(false, key.atype(), c.count(), c.next(), c.entries()));
    FatPointer fresh = allocNear(t, id1);
    t.txWrite(fresh, chunk(true, key.atype(), c.count() + 1, older, entries));
    t.txFree(h);
    t.txWrite(id1, withHead(id1, node, key.atype(), fresh));
    return fresh;
  }

  private static List<Entry> newestFirst(List<Entry> oldestFirst) {
    List<Entry> out = new ArrayList<>(oldestFirst);
    Collections.reverse(out);
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

  /** Reads the range from {@code head} and older chunks: null if a chunk was freed meanwhile. */
  private static List<Tao.Assoc> collect(
      HeadKey key, Chunk head, long pos, int limit, Function<FatPointer, byte[]> read) {
    List<Tao.Assoc> out = new ArrayList<>(Math.min(limit, 64));
    long skip = pos;
    Chunk c = head;
    while (out.size() < limit) {
      if (skip >= c.entries().size()) {
        skip -= c.entries().size();
      } else {
        for (int i = (int) skip; i < c.entries().size() && out.size() < limit; i++) {
          Entry e = c.entries().get(i);
          out.add(new Tao.Assoc(key.id1(), key.atype(), e.id2(), e.time(), e.data()));
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
      h = txs.readNode(key.id1()).head(key.atype());
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
      txs.refetches.increment();
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
      FatPointer h = TaoTx.txNode(t, key.id1()).head(key.atype()); // NOT_FOUND here: unknown id1
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
      txs.aborts.increment();
      TaoTx.pause(attempt, start, "a read of " + key);
    }
  }
}
