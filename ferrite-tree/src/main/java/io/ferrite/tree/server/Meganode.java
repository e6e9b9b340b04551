package io.ferrite.tree.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import io.ferrite.tree.NodeSource;
import io.ferrite.tree.TreeLimits;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A meganode (Cell §2.2): one service region of fixed-size small nodes holding a local B-link tree
 * by Sagiv's algorithm, its leaves pointing to key-value extents ({@link Extents}) in extent
 * regions. Node 0 is the header, encoded as a node whose {@code right} is the root's index and
 * whose {@code level} is the root's level; nodes 1.. are tree nodes, handed out by a bump pointer.
 *
 * <h2>Concurrency</h2>
 *
 * Searches are lock-free ({@link MeganodeReader} over {@link #source()}, the same code a client
 * runs one-sided). A writer locks <i>one node at a time</i> (Sagiv): the lock is the node's head
 * version word, taken by a compare-and-swap from even to odd; the tail word is then made odd
 * (release) and a store-store fence keeps both odd words ahead of the body's writes; unlocking
 * writes the tail then the head back to the next even value (release), so a reader that saw both
 * words even and equal, the head read (acquire) before the body and the tail after it (load-load
 * fence), copied a body no writer touched in between (Cell §2.3). A split writes the new right
 * sibling (not yet reachable) before it relinks the locked left node, then unlocks it and inserts
 * the separator into the parent as a separate step, as in Lehman and Yao; a search that reaches the
 * left node in between follows its right link.
 *
 * <h2>Meganode level (Cell §2.2)</h2>
 *
 * The header's {@code incarnation} word holds the meganode's level in the tree of meganodes (0: a
 * leaf meganode, whose entries point to extents; above: entries hold child meganode pointers,
 * {@code server << 32 | region}). Its {@code low}/{@code high} bound the keys the meganode holds,
 * its {@code link} names the right meganode. Writes take the meganode's structure lock shared; a
 * meganode split takes it exclusive twice, briefly: {@link #beginSplit} to close the right half
 * (from the split key up, writes are then answered {@link Write.Status#SPLITTING} until the split
 * ends) and {@link #finishSplit} to relink and trim. While the right half is copied into the new
 * meganode, writes to the left half go on (Cell §2.2: "X_right is locked for the duration of the
 * split, but updates can continue in X_left"); searches never wait.
 *
 * <p>When the nodes run out before a split made room, a put fails with {@link ErrorCode#NO_SPACE}.
 */
public final class Meganode {
  final NodeRegion nodes;
  final int nodeSize;
  private final ExtentAllocator extents;
  private final TreeLimits limits;
  private final AtomicInteger incarnations = new AtomicInteger();
  final NodeSource source = new Source();

  /**
   * Each thread's node copy buffer for the searches and scans the service runs here ({@link
   * #search(byte[], int)}, {@link #scanPart(byte[], byte[], int, int)}): a reader is used by one
   * thread and dropped before the call returns (values are copied out), so a thread's searches may
   * share one, saving a node-sized allocation per meganode searched.
   */
  private final ThreadLocal<byte[]> buffers;

  private volatile MappedRegion[] extentRegions;
  final java.util.concurrent.locks.ReentrantReadWriteLock structure =
      new java.util.concurrent.locks.ReentrantReadWriteLock();
  final boolean leafMeganode;
  private final AtomicInteger lostSeparators = new AtomicInteger();

  /**
   * The split in progress, from {@link #beginSplit} to {@link #finishSplit} or {@link #abortSplit}:
   * its key, from which writes are answered {@link Write.Status#SPLITTING}, and the future
   * completed when it ends. Written under the structure lock held exclusively (set) or after the
   * relink under it (cleared), read by writes under it held shared: a write either sees it or
   * finished before it was set (volatile: also read by {@link #splitDone} with no lock).
   */
  private volatile RightHalf splitting;

  /**
   * The longest a split's relink held this meganode's structure lock (every write waiting), in
   * nanoseconds: written by the splitter thread under the lock, read for stats and probes.
   */
  volatile long relinkNanos;

  /** A split's closed right half: keys from {@code key} up; {@code done} when the split ends. */
  record RightHalf(byte[] key, CompletableFuture<Void> done) {}

  /** What a write did, or where it must go instead. */
  public record Write(Status status, long next) {
    public enum Status {
      CREATED,
      REPLACED,
      DELETED,
      ABSENT,
      /** The key is past this meganode's range: go on at its right meganode {@code next}. */
      RIGHT,
      /** The key is below this meganode's range: start again from the tree's root. */
      RESTART,
      /**
       * The key is in the right half of a split in progress (Cell §2.2): nothing written; try again
       * once {@link #splitDone} completes (the key has then moved right, or the split was given
       * up). Retryable.
       */
      SPLITTING
    }
  }

  /**
   * Formats {@code region} as an empty meganode of {@code nodeSize}-byte nodes (a multiple of 8, at
   * least 128) whose extents {@code extents} keeps.
   */
  public Meganode(MappedRegion region, int nodeSize, ExtentAllocator extents) {
    this(region, nodeSize, extents, 0, new byte[0], null, 0);
  }

  /**
   * Formats {@code region} as an empty meganode at meganode level {@code level} (0: leaf) holding
   * keys from {@code low} (empty: minus infinity) to {@code high} (null: plus infinity), its right
   * meganode {@code link} (0: none).
   */
  public Meganode(
      MappedRegion region,
      int nodeSize,
      ExtentAllocator extents,
      int level,
      byte[] low,
      byte[] high,
      long link) {
    this.nodes = new NodeRegion(region, nodeSize);
    this.buffers = ThreadLocal.withInitial(() -> new byte[nodeSize]);
    this.leafMeganode = level == 0;
    this.nodeSize = nodeSize;
    this.extents = extents;
    this.extentRegions = extents.regions().toArray(new MappedRegion[0]);
    long largest = extents.region(0).length() - Extents.HEADER;
    this.limits = new TreeLimits(nodeSize, (int) Math.min(Integer.MAX_VALUE - 64, largest / 2));
    Node root = new Node();
    root.flags = Node.LEAF | Node.LIVE | Node.HIGH_INF;
    root.incarnation = 1;
    nodes.allocate(); // node 1
    nodes.writeFresh(1, root);
    Node header = new Node();
    header.right = 1;
    header.incarnation = level;
    header.flags = Node.LIVE | (level == 0 ? Node.LEAF : 0) | (high == null ? Node.HIGH_INF : 0);
    header.low = low;
    header.high = high == null ? new byte[0] : high;
    header.link = link;
    nodes.writeFresh(0, header);
  }

  public TreeLimits limits() {
    return limits;
  }

  /** The region this meganode lives in. */
  public MappedRegion region() {
    return nodes.region();
  }

  /** Nodes in use, header included, and the capacity. */
  public int[] nodeUsage() {
    return nodes.usage();
  }

  /** Whether this is a leaf meganode (level 0, fixed for its life): a read of no node. */
  public boolean leaf() {
    return leafMeganode;
  }

  /** This meganode's level in the tree of meganodes (0: a leaf meganode). */
  public int level() {
    return leafMeganode ? 0 : new MeganodeReader(source).header().incarnation;
  }

  /** The lock-free node and extent source over this server's own memory. */
  public NodeSource source() {
    return source;
  }

  // ------------------------------------------------------------------ operations

  /** The value of {@code key} in a tree of this one meganode, or null. Lock-free. */
  public byte[] get(byte[] key) {
    return new MeganodeReader(source).get(limits.key(key));
  }

  /** Searches this meganode for {@code key} ({@link MeganodeReader#find}). Lock-free. */
  public MeganodeReader.Outcome search(byte[] key) {
    return new MeganodeReader(source).find(key);
  }

  /**
   * Searches this meganode for {@code key}, failing {@code BUSY} past {@code maxRetries} torn
   * copies or restarts (an inline search's bound: {@link MeganodeReader#MeganodeReader(NodeSource,
   * int)}). Lock-free.
   */
  public MeganodeReader.Outcome search(byte[] key, int maxRetries) {
    return new MeganodeReader(source, maxRetries, buffers.get()).find(key);
  }

  /**
   * Pairs in {@code [from, to)} of a tree of this one meganode, at most {@code limit}; see {@link
   * MeganodeReader#scan}.
   */
  public List<Map.Entry<byte[], byte[]>> scan(byte[] from, byte[] to, int limit) {
    limits.scan(from, to, limit);
    return new MeganodeReader(source).scan(from == null ? new byte[0] : from, to, limit).pairs();
  }

  /** This meganode's part of a scan; see {@link MeganodeReader#scan}. Lock-free. */
  public MeganodeReader.ScanPart scanPart(byte[] from, byte[] to, int limit) {
    return new MeganodeReader(source).scan(from, to, limit);
  }

  /** {@link #scanPart(byte[], byte[], int)}, failing {@code BUSY} past {@code maxRetries}. */
  public MeganodeReader.ScanPart scanPart(byte[] from, byte[] to, int limit, int maxRetries) {
    return new MeganodeReader(source, maxRetries, buffers.get()).scan(from, to, limit);
  }

  /** The write's answer when {@code key} is not in this meganode's range, else null. Lock-free. */
  Write outside(byte[] key) {
    Node h = new MeganodeReader(source).header();
    if (h.below(key)) {
      return new Write(Write.Status.RESTART, 0);
    }
    if (h.beyond(key)) {
      return new Write(Write.Status.RIGHT, h.link);
    }
    return null;
  }

  /**
   * {@link #outside}, or SPLITTING when {@code key} is in the right half of a split in progress
   * (the caller holds the structure lock shared, so the split cannot close it in between).
   */
  private Write closed(byte[] key) {
    Write w = outside(key);
    if (w != null) {
      return w;
    }
    RightHalf s = splitting;
    if (s != null && java.util.Arrays.compareUnsigned(key, s.key()) >= 0) {
      return new Write(Write.Status.SPLITTING, 0);
    }
    return null;
  }

  /**
   * Completes when the split in progress ends (relinked, or given up); already complete when there
   * is none. A write answered {@link Write.Status#SPLITTING} tries again after it.
   */
  public CompletableFuture<Void> splitDone() {
    RightHalf s = splitting;
    return s == null ? CompletableFuture.completedFuture(null) : s.done();
  }

  /** The key from which writes wait for the split in progress, or null (for tests and stats). */
  public byte[] splittingKey() {
    RightHalf s = splitting;
    return s == null ? null : s.key();
  }

  void startSplitting(byte[] key) {
    splitting = new RightHalf(key, new CompletableFuture<>());
  }

  /** Ends the split in progress: its waiting writes try again. */
  void endSplitting() {
    CompletableFuture<Void> done = reopen();
    if (done != null) {
      done.complete(null);
    }
  }

  /**
   * Reopens the right half (under the structure lock, so that a write after it sees the relinked
   * header) and returns the future to complete once the lock is released, or null if none was
   * closed.
   */
  CompletableFuture<Void> reopen() {
    RightHalf s = splitting;
    splitting = null;
    return s == null ? null : s.done();
  }

  /**
   * Inserts or replaces {@code key}'s value; true if the key was new. Waits for a split in progress
   * whose right half holds the key.
   *
   * @throws FerriteException INVALID_ARGUMENT for a bad key or value, NO_SPACE when the meganode or
   *     its extent regions are full
   */
  public boolean put(byte[] key, byte[] value) {
    Write w;
    while ((w = write(key, value)).status() == Write.Status.SPLITTING) {
      splitDone().join();
    }
    if (w.status() == Write.Status.RIGHT || w.status() == Write.Status.RESTART) {
      throw new FerriteException(ErrorCode.MOVED, "key outside this meganode: " + w);
    }
    return w.status() == Write.Status.CREATED;
  }

  /**
   * Inserts or replaces {@code key}'s value in this leaf meganode: CREATED, REPLACED, or RIGHT /
   * RESTART when the key is outside its range, SPLITTING when it is in the right half of a split in
   * progress (nothing written).
   *
   * @throws FerriteException INVALID_ARGUMENT for a bad key or value, NO_SPACE when the meganode or
   *     its extent regions are full
   */
  public Write write(byte[] key, byte[] value) {
    return write(key, value, null);
  }

  /**
   * As {@link #write(byte[], byte[])}, and runs {@code logged} (if not null) after the pair is
   * written, while this meganode's structure lock is still held shared: a split of this meganode
   * cannot begin between the write and what {@code logged} does (the service appends the write to
   * its operation log there, so the log has every write to a meganode before that meganode's split
   * begins; TreeService).
   */
  public Write write(byte[] key, byte[] value, Runnable logged) {
    limits.key(key);
    limits.value(value);
    structure.readLock().lock();
    try {
      Write w = closed(key);
      if (w != null) {
        return w;
      }
      w = putLocked(key, value, 0);
      if (logged != null) {
        logged.run();
      }
      return w;
    } finally {
      structure.readLock().unlock();
    }
  }

  /**
   * Inserts (or replaces) the child pointer {@code child} for keys from {@code key} in this
   * internal meganode. Keys may be empty here (minus infinity). Only the service's splitter thread
   * calls this, the thread that splits meganodes, so no split of this meganode is in progress.
   */
  public Write putChild(byte[] key, long child) {
    structure.readLock().lock();
    try {
      Write w = outside(key);
      return w != null ? w : putLocked(key, null, child);
    } finally {
      structure.readLock().unlock();
    }
  }

  private Write putLocked(byte[] key, byte[] value, long child) {
    // Room for a split at every level (and a new root) before anything changes, so that a full
    // meganode fails a put cleanly: no extent, no entry (NO_SPACE is not retryable here; the
    // service waits for a meganode split and tries again).
    int levels = new MeganodeReader(source).header().level + 2;
    nodes.requireFree(levels);
    long[] pointer;
    if (value == null) {
      pointer = new long[] {child, 0, 0};
    } else {
      pointer = newExtent(key, value);
    }
    MeganodeReader reader = new MeganodeReader(source);
    int[] path = new int[256];
    int index = descend(reader, key, path);
    Locked locked = lockCovering(key, index);
    index = locked.index();
    Node n = locked.node();
    long v = locked.version();
    int i = n.find(key);
    if (i >= 0) {
      long[] old = n.values.set(i, pointer);
      nodes.write(index, n, v);
      // The old extent is freed only after the leaf stopped pointing to it; a reader still holding
      // the old leaf copy fails its checksum once the extent is reused, and reads the leaf again.
      freeExtent(old);
      return new Write(Write.Status.REPLACED, 0);
    }
    int at = n.ceiling(key);
    n.keys.add(at, key);
    n.values.add(at, pointer);
    try {
      insertOrSplit(index, n, v, reader, path);
    } catch (FerriteException e) {
      freeExtent(pointer); // the entry was not written
      throw e;
    }
    return new Write(Write.Status.CREATED, 0);
  }

  long[] newExtent(byte[] key, byte[] value) {
    int incarnation = incarnations.incrementAndGet();
    if (incarnation == 0) {
      incarnation = incarnations.incrementAndGet();
    }
    byte[] image = Extents.image(incarnation, key, value);
    return new long[] {allocateExtent(image), image.length, Extents.checksum(image)};
  }

  /** Deletes {@code key} from a tree of this one meganode; true if it was present. */
  public boolean delete(byte[] key) {
    Write w;
    while ((w = remove(key)).status() == Write.Status.SPLITTING) {
      splitDone().join();
    }
    if (w.status() == Write.Status.RIGHT || w.status() == Write.Status.RESTART) {
      throw new FerriteException(ErrorCode.MOVED, "key outside this meganode: " + w);
    }
    return w.status() == Write.Status.DELETED;
  }

  /**
   * Deletes {@code key}: DELETED, ABSENT, RIGHT / RESTART when outside this meganode, or SPLITTING
   * (nothing done) as {@link #write(byte[], byte[])}.
   */
  public Write remove(byte[] key) {
    return remove(key, null);
  }

  /**
   * As {@link #remove(byte[])}, and runs {@code logged} (if not null) when the key was deleted,
   * under the structure lock as {@link #write(byte[], byte[], Runnable)} does.
   */
  public Write remove(byte[] key, Runnable logged) {
    limits.key(key);
    structure.readLock().lock();
    try {
      Write w = closed(key);
      if (w != null) {
        return w;
      }
      if (!removeLocked(key)) {
        return new Write(Write.Status.ABSENT, 0);
      }
      if (logged != null) {
        logged.run();
      }
      return new Write(Write.Status.DELETED, 0);
    } finally {
      structure.readLock().unlock();
    }
  }

  /**
   * Every entry of this meganode in key order, read lock-free from its local leaf level: a leaf
   * meganode's values, or an internal one's child pointers (values null). Consistent only while no
   * write or split runs (the service's log compaction holds them off).
   */
  public void forEachEntry(EntrySink sink) {
    MeganodeReader reader = new MeganodeReader(source);
    Node n = reader.read(reader.header().right);
    while (!n.leaf()) {
      n = reader.read((int) n.values.get(0)[0]);
    }
    while (true) {
      for (int i = 0; i < n.keys.size(); i++) {
        long[] p = n.values.get(i);
        if (leafMeganode) {
          sink.entry(n.keys.get(i), Extents.value(source.readExtent(p[0], (int) p[1])), 0);
        } else {
          sink.entry(n.keys.get(i), null, p[0]);
        }
      }
      if (n.right == 0) {
        return;
      }
      n = reader.read(n.right);
    }
  }

  /** One entry of {@link #forEachEntry}: a value, or (value null) a child meganode pointer. */
  public interface EntrySink {
    void entry(byte[] key, byte[] value, long child);
  }

  private boolean removeLocked(byte[] key) {
    MeganodeReader reader = new MeganodeReader(source);
    int[] path = new int[256];
    int index = descend(reader, key, path);
    Locked locked = lockCovering(key, index);
    index = locked.index();
    Node n = locked.node();
    long v = locked.version();
    int i = n.find(key);
    if (i < 0) {
      nodes.unlock(index, v);
      return false;
    }
    n.keys.remove(i);
    long[] old = n.values.remove(i);
    // Sagiv: a delete removes the entry under the leaf's lock only; no merging, no rebalancing.
    nodes.write(index, n, v);
    freeExtent(old);
    return true;
  }

  // ------------------------------------------------------------------ meganode split (Cell §2.2)

  /** Whether more than half the nodes are in use: split now, before the meganode fills. */
  public boolean wantsSplit() {
    int[] u = nodeUsage();
    return u[0] > u[1] / 2;
  }

  /**
   * The right half of a meganode split: its first key (the separator), this meganode's level, high
   * key (null: plus infinity) and right link, which the new meganode takes over, and its entries in
   * key order: values (leaf meganode) or child pointers (internal).
   */
  public record SplitHalf(
      byte[] key,
      int level,
      byte[] high,
      long link,
      List<byte[]> keys,
      List<byte[]> values,
      List<Long> children) {}

  /**
   * Begins a split (one at a time per meganode: the service's splitter thread): picks the median
   * key <i>K</i>, closes the right half (briefly taking the structure lock exclusively: from then
   * until {@link #finishSplit} or {@link #abortSplit}, writes of keys from <i>K</i> are answered
   * {@link Write.Status#SPLITTING}; writes below it go on), and returns the right half to copy into
   * a new meganode; null (nothing closed) when there are fewer than two entries.
   */
  public SplitHalf beginSplit() {
    return MeganodeSplit.begin(this);
  }

  /**
   * Gives up a split begun by {@link #beginSplit}: nothing moved; the right half's writes go on.
   */
  public void abortSplit() {
    endSplitting();
  }

  /**
   * Finishes a split begun by {@link #beginSplit} once meganode {@code right} holds the keys from
   * {@code key} up: (1) the header's high key becomes {@code key} and its link {@code right}, so
   * every search that reads the header from now on sends those keys right; (2) level by level from
   * the local root down, the node whose range ends the keys below {@code key} is trimmed (entries
   * from {@code key} removed, high key {@code key}, no right link), so a search that read the old
   * header and reaches it finds the level's end and reads the header again; (3) every node right of
   * it is invalidated (not live, next incarnation), so a search that reaches one restarts, and is
   * freed for reuse, with the extents of the removed pairs. All of it under the structure lock held
   * exclusively: the only moment every write to this meganode waits; the right half's waiting
   * writes then try again (and are answered RIGHT). Searches in flight meanwhile see either copy of
   * a right-half pair, both the same: its writes were closed since {@link #beginSplit}.
   */
  public void finishSplit(byte[] key, long right) {
    MeganodeSplit.finish(this, key, right);
  }

  /**
   * Fills this new, empty meganode, which no search or write can reach yet (a split's target before
   * the relink), with {@code keys} in ascending order: values (a leaf meganode) or child pointers.
   * Built bottom-up, each local level's nodes packed to about 70 % (the fill of random inserts, so
   * the next inserts do not split every node) and linked left to right, then the header names the
   * root: one node write per node, where inserting the pairs one by one decodes the path for each
   * (a split's copy of ~139 000 pairs took ~3.5 s that way). Nothing is read back.
   *
   * @throws FerriteException NO_SPACE if the nodes or the extent regions run out
   */
  public void fill(List<byte[]> keys, List<byte[]> values, List<Long> children) {
    MeganodeSplit.fill(this, keys, values, children);
  }

  // ------------------------------------------------------------------ Sagiv's insert

  /**
   * Writes the locked node {@code n} (an entry added) at {@code index}, splitting it when it does
   * not fit, and carries separators up the tree until one fits.
   */
  private void insertOrSplit(int index, Node n, long v, MeganodeReader reader, int[] path) {
    boolean leafWritten = false;
    while (true) {
      if (n.encodedSize() <= nodeSize) {
        nodes.write(index, n, v);
        return;
      }
      // Split by bytes, both halves non-empty (the key limit guarantees both then fit).
      int total = n.encodedSize();
      int mid = 1;
      int per = n.leaf() ? Node.LEAF_ENTRY : Node.INNER_ENTRY;
      int size = Node.HEADER + Node.TRAILER + n.low.length + n.high.length;
      for (int i = 0; i < n.keys.size() - 1; i++) {
        size += per + n.keys.get(i).length;
        if (size >= total / 2) {
          mid = i + 1;
          break;
        }
      }
      int rightIndex;
      try {
        rightIndex = nodes.allocate();
      } catch (FerriteException e) {
        // Never leave a node locked: it would stop every reader. Nothing of it changed in memory.
        nodes.unlock(index, v);
        if (!leafWritten) {
          throw e;
        }
        // The write is in its leaf; only a separator is missing above, which the right links
        // make up for (Lehman and Yao): searches and scans stay correct, a little longer.
        lostSeparators.incrementAndGet();
        return;
      }
      Node r = new Node();
      r.flags = n.flags;
      r.level = n.level;
      r.incarnation = Math.max(1, nodes.incarnationOf(rightIndex) + 1);
      byte[] sep = n.keys.get(mid);
      r.low = sep;
      r.high = n.high;
      r.right = n.right;
      r.keys.addAll(n.keys.subList(mid, n.keys.size()));
      r.values.addAll(n.values.subList(mid, n.values.size()));
      nodes.writeFresh(rightIndex, r);
      n.keys.subList(mid, n.keys.size()).clear();
      n.values.subList(mid, n.values.size()).clear();
      n.high = sep;
      n.flags &= ~Node.HIGH_INF;
      n.right = rightIndex;
      nodes.write(index, n, v);
      leafWritten = true;
      // The left node is unlocked: its right link leads searches to the new sibling until the
      // parent has the separator (Lehman and Yao). Now insert (sep, rightIndex) one level up.
      int level = n.level + 1;
      int parent;
      try {
        parent = parentAt(level, sep, reader, path);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NO_SPACE) {
          throw e;
        }
        lostSeparators.incrementAndGet();
        return;
      }
      if (parent < 0) {
        return; // a new root was built over the whole level, the separator in it
      }
      Locked locked = lockCovering(sep, parent);
      index = locked.index();
      n = locked.node();
      v = locked.version();
      if (n.find(sep) >= 0) {
        nodes.unlock(index, v); // a root built meanwhile has it already
        return;
      }
      int at = n.ceiling(sep);
      n.keys.add(at, sep);
      n.values.add(at, new long[] {rightIndex});
    }
  }

  /**
   * A node at {@code level} to start the separator's insert from: the one the descent passed, or
   * (the tree grew since) one found by a new search; -1 if {@code level} is above the root, in
   * which case a new root was built here over the level below.
   */
  private int parentAt(int level, byte[] sep, MeganodeReader reader, int[] path) {
    while (true) {
      Node header = reader.header();
      if (header.level < level) {
        if (growRoot(level - 1)) {
          return -1;
        }
        continue;
      }
      if (path[level] != 0) {
        return path[level];
      }
      int index = header.right;
      while (true) {
        Node n = reader.read(index);
        if (n.beyond(sep) && n.right != 0) {
          index = n.right;
        } else if (n.level == level) {
          return index;
        } else {
          index = (int) n.values.get(Math.max(0, n.floor(sep)))[0];
        }
      }
    }
  }

  /**
   * Builds a new root over every node of level {@code childLevel}, under the header's lock, if the
   * root is still at that level: the chain from the old root along right links, each node's low key
   * its separator (a split of the chain after this walk inserts its separator into the new root by
   * the usual path). True if this call built it.
   */
  private boolean growRoot(int childLevel) {
    long hv = nodes.lock(0);
    Node header = Node.decodeBody(nodes.copy(0));
    if (header.level != childLevel) {
      nodes.unlock(0, hv);
      return false;
    }
    Node root = new Node();
    root.flags = Node.LIVE | Node.HIGH_INF;
    root.level = childLevel + 1;
    MeganodeReader reader = new MeganodeReader(source);
    int index = header.right;
    while (index != 0) {
      Node n = reader.read(index);
      root.keys.add(n.low);
      root.values.add(new long[] {index});
      index = n.right;
    }
    if (root.encodedSize() > nodeSize) {
      nodes.unlock(0, hv);
      throw new FerriteException(
          ErrorCode.INTERNAL, "new root over " + root.keys.size() + " nodes does not fit a node");
    }
    int rootIndex;
    try {
      rootIndex = nodes.allocate();
    } catch (FerriteException e) {
      nodes.unlock(0, hv);
      throw e;
    }
    root.incarnation = Math.max(1, nodes.incarnationOf(rootIndex) + 1);
    nodes.writeFresh(rootIndex, root);
    header.right = rootIndex;
    header.level = childLevel + 1;
    nodes.write(0, header, hv);
    return true;
  }

  /**
   * Descends lock-free to the leaf for {@code key}, recording each level's node in {@code path}.
   */
  private int descend(MeganodeReader reader, byte[] key, int[] path) {
    while (true) {
      int index = reader.header().right;
      boolean stale = false;
      while (true) {
        Node n = reader.read(index);
        if (!n.live() || n.below(key)) {
          stale = true;
          break;
        }
        if (n.beyond(key) && n.right != 0) {
          index = n.right;
          continue;
        }
        path[n.level] = index;
        if (n.leaf()) {
          return index;
        }
        index = (int) n.values.get(Math.max(0, n.floor(key)))[0];
      }
      if (stale) {
        Thread.onSpinWait();
      }
    }
  }

  /** A node locked by {@link #lockCovering}: its index, its decoded body, its odd version. */
  private record Locked(int index, Node node, long version) {}

  /**
   * Locks the node at {@code key}'s level whose range holds it, starting at {@code index} and
   * moving right one lock at a time (Sagiv: unlock before locking the right sibling).
   */
  private Locked lockCovering(byte[] key, int index) {
    while (true) {
      long v = nodes.lock(index);
      Node n = Node.decodeBody(nodes.copy(index));
      if (n.beyond(key) && n.right != 0) {
        nodes.unlock(index, v);
        index = n.right;
        continue;
      }
      return new Locked(index, n, v);
    }
  }

  // ------------------------------------------------------------------ extents

  private long allocateExtent(byte[] image) {
    synchronized (extents) {
      boolean[] grew = new boolean[1];
      long address = extents.allocate(image.length, grew);
      if (grew[0]) {
        extentRegions = extents.regions().toArray(new MappedRegion[0]);
      }
      extents.write(address, image);
      return address;
    }
  }

  void freeExtent(long[] pointer) {
    if (!leafMeganode) {
      return; // an internal meganode's entries are child pointers, not extents
    }
    synchronized (extents) {
      extents.free(pointer[0], (int) pointer[1]);
    }
  }

  /** Reads this meganode's nodes and extents from the server's own memory. */
  private final class Source implements NodeSource {
    @Override
    public int nodeSize() {
      return nodeSize;
    }

    @Override
    public void readNode(int index, byte[] dst) {
      nodes.readNode(index, dst);
    }

    @Override
    public byte[] readExtent(long address, int length) {
      MappedRegion[] regions = extentRegions;
      int r = (int) (address >>> 32);
      long off = address & 0xFFFFFFFFL;
      byte[] e = new byte[length];
      if (r < regions.length && off + length <= regions[r].length()) {
        regions[r].readInto(off, ByteBuffer.wrap(e));
      }
      return e;
    }
  }

  /** Separators not inserted above a node split because the meganode was full (see above). */
  public int lostSeparators() {
    return lostSeparators.get();
  }

  /** For tests: all pairs, in order, through the lock-free reader. */
  List<Map.Entry<byte[], byte[]>> all() {
    return new ArrayList<>(
        new MeganodeReader(source).scan(new byte[0], null, Integer.MAX_VALUE).pairs());
  }
}
