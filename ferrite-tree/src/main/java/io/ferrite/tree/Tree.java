package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A handle on one sorted tree (Cell): {@code get}, {@code put}, {@code delete}, {@code scan} in
 * unsigned byte order and {@code multiGet}. A search starts at the root meganode and goes one
 * meganode at a time, by either path, chosen per request ({@link Path}):
 *
 * <ul>
 *   <li>{@link Path#SERVER}: one SEARCH RPC per meganode; the server answers the value or the next
 *       meganode's pointer (Cell §2.2);
 *   <li>{@link Path#CLIENT}: one-sided reads of the meganode's small nodes, verified and retried
 *       when torn, right links followed ({@link MeganodeReader}, Cell §2.3), and of the value's
 *       extent;
 *   <li>{@link Path#AUTO} (the default): each meganode's search by the path the {@link
 *       TreeClient}'s {@link PathSelector} picks from measured latencies (Cell §3).
 * </ul>
 *
 * Reads start at the leaf meganode a cached key range names, and client-side searches take the
 * nodes near the root from the handle's {@link TreeCache} (Cell §2.2–2.3; {@code
 * tree.cache.bytes}). Writes always go by RPC, one per meganode traversed, the last to the leaf
 * meganode's server. Thread-safe.
 */
public final class Tree {
  /** The search path of a read. */
  public enum Path {
    /** Searches run on the servers, one RPC per meganode. */
    SERVER,
    /** Searches run here, over one-sided reads of the servers' nodes. */
    CLIENT,
    /** Each meganode's search by the path the locality selector picks ({@link PathSelector}). */
    AUTO
  }

  /** Bound on meganodes visited by one operation (right links and restarts included). */
  static final int MAX_HOPS = 100_000;

  /**
   * Bound on BUSY answers one write takes before it fails BUSY: a server holds a write to the half
   * of a meganode being split for up to a second before it answers BUSY (TreeService), so this
   * rides out a split's copy of a minute.
   */
  static final int MAX_BUSY = 60;

  private final TreeClient owner;
  private final TreeClient.TreeInfo info;
  private final Map<Long, RemoteMeganode> meganodes = new ConcurrentHashMap<>();
  private final AtomicLong rpcs = new AtomicLong();
  private final AtomicLong nodeReads = new AtomicLong();
  private final AtomicLong tornReads = new AtomicLong();
  private final AtomicLong extentReads = new AtomicLong();
  // LongAdders: every AUTO search counts one, from every thread (an AtomicLong's line bounced).
  private final LongAdder autoServer = new LongAdder();
  private final LongAdder autoClient = new LongAdder();
  private final TreeCache cache;
  private final PathSelector selector;
  private volatile long root;
  private volatile long lastRefresh;
  private volatile TreeLimits limits;

  Tree(TreeClient owner, TreeClient.TreeInfo info) {
    this.owner = owner;
    this.info = info;
    this.cache = owner.cacheBytes() > 0 ? new TreeCache(owner.cacheBytes()) : null;
    this.selector = owner.selector();
    this.root = info.root() != 0 ? info.root() : openRoot();
  }

  public String name() {
    return info.name();
  }

  /** The root meganode this handle's operations start at. */
  long rootPointer() {
    return root;
  }

  /** RPCs this handle sent to servers (searches, writes, scans, layouts). */
  public long rpcs() {
    return rpcs.get();
  }

  /** One-sided node reads of client-side searches, torn ones included. */
  public long nodeReads() {
    return nodeReads.get();
  }

  /** One-sided extent reads of client-side searches. */
  public long extentReads() {
    return extentReads.get();
  }

  /** Meganode searches the selector sent server-side and client-side ({@link Path#AUTO}). */
  public long[] autoChoices() {
    return new long[] {autoServer.sum(), autoClient.sum()};
  }

  /** This handle's caches, or null when {@code tree.cache.bytes} is 0. */
  public TreeCache cache() {
    return cache;
  }

  /** Torn node copies that client-side searches read again. */
  public long tornReads() {
    return tornReads.get();
  }

  private long openRoot() {
    ByteBuffer b = call(info.server(), TreeProtocol.OPEN_TREE, new Wire.Writer().i64(info.id()));
    return new Wire.Reader(b, "tree root").i64("root");
  }

  /**
   * Where to go after meganode {@code from} answered RIGHT (the key is past its range) with {@code
   * to}. If {@code from} is the root this handle starts at, the root split since it was learned: it
   * is still the leftmost meganode of its level, so every key is found along the links, but each
   * search would walk them. Ask the directory for the new root, at most every 50 ms (Cell §2.2:
   * clients cache meganodes near the root and learn of splits by following links).
   */
  private long right(long from, long to) {
    if (from == root) {
      long now = System.nanoTime();
      if (now - lastRefresh > 50_000_000L) {
        lastRefresh = now;
        refreshRoot();
      }
    }
    return to;
  }

  /** The root again, from the directory (a search fell below a meganode's range). */
  private long refreshRoot() {
    long r = owner.info(info.name()).root();
    root = r != 0 ? r : openRoot();
    return root;
  }

  private ByteBuffer call(int server, int opcode, Wire.Writer w) {
    rpcs.incrementAndGet();
    return owner.ferrite().callSync(server, TreeProtocol.SERVER_SERVICE, opcode, w.toBuffer());
  }

  private RemoteMeganode meganode(long pointer) {
    return meganodes.computeIfAbsent(
        pointer,
        p -> {
          rpcs.incrementAndGet();
          return new RemoteMeganode(owner.ferrite(), p);
        });
  }

  /** Limits from the root meganode's node size (keys), checked before anything is sent. */
  private TreeLimits limits() {
    TreeLimits l = limits;
    if (l == null) {
      l = new TreeLimits(meganode(root).nodeSize(), Integer.MAX_VALUE - 64);
      limits = l;
    }
    return l;
  }

  // ------------------------------------------------------------------ reads

  /** The value of {@code key}, or null, each meganode searched by the path the selector picks. */
  public byte[] get(byte[] key) {
    return get(key, Path.AUTO);
  }

  /**
   * The value of {@code key}, or null, searched by {@code path}. Linearizable: the answer comes
   * from a fresh copy of the leaf holding the key (server-side, the server's own; client-side, a
   * one-sided read) whatever the caches said.
   *
   * <p>The search starts at the leaf meganode a cached range names, if any, else at the root; a
   * meganode that answers RIGHT or RESTART for a cached range drops it, and one that answers RIGHT
   * after its parent meganode sent the search there drops the parent's cached nodes (the parent's
   * copy lacked the split's separator).
   */
  public byte[] get(byte[] key, Path path) {
    limits().key(key);
    TreeCache.Range route = cache == null ? null : cache.route(key);
    long p = route != null ? route.pointer() : root;
    long parent = 0;
    for (int hop = 0; hop < MAX_HOPS; hop++) {
      Hop h = hop(p, key, path);
      switch (h.kind()) {
        case VALUE:
        case ABSENT:
          if (cache != null && (route == null || route.pointer() != p)) {
            learn(p, h);
          }
          return h.value();
        case NEXT:
          parent = p;
          p = h.pointer();
          continue;
        case RIGHT:
          if (cache != null) {
            if (route != null) {
              cache.drop(route);
              route = null;
            }
            if (parent != 0) {
              cache.clear(parent);
            }
          }
          parent = 0;
          p = right(p, h.pointer());
          continue;
        default:
          if (cache != null) {
            cache.clear();
          }
          route = null;
          parent = 0;
          p = refreshRoot();
      }
    }
    throw tooManyHops("get");
  }

  /** What one meganode's search answered, and the header it used (client path only). */
  private record Hop(
      MeganodeReader.Outcome.Kind kind, byte[] value, long pointer, Node header, long reads) {
    Hop(MeganodeReader.Outcome.Kind kind, byte[] value, long pointer) {
      this(kind, value, pointer, null, 1);
    }
  }

  /**
   * One meganode's search for {@code key} by {@code path}; with {@link Path#AUTO} the selector
   * picks the path and is told how long it took (and, client-side, over how many reads).
   */
  private Hop hop(long p, byte[] key, Path path) {
    if (path != Path.AUTO) {
      return path == Path.CLIENT ? clientHop(p, key) : serverHop(p, key);
    }
    int server = TreeProtocol.server(p);
    PathSelector.Choice c = selector.choose(server);
    Path use = c.path();
    if (use == Path.CLIENT) {
      autoClient.increment();
    } else {
      autoServer.increment();
    }
    // The clock only for the searches the selector samples (1 in N while its estimate is steady).
    long t0 = c.timed() ? selector.now() : 0;
    boolean ok = false;
    long reads = 1;
    try {
      Hop h = use == Path.CLIENT ? clientHop(p, key) : serverHop(p, key);
      reads = h.reads();
      ok = true;
      return h;
    } finally {
      selector.finished(server, c, c.timed() ? selector.now() - t0 : 0, reads, ok);
    }
  }

  private Hop clientHop(long p, byte[] key) {
    MeganodeReader reader = new MeganodeReader(meganode(p), cache == null ? null : cache.of(p));
    MeganodeReader.Outcome o;
    try {
      o = reader.search(key);
    } finally {
      nodeReads.addAndGet(reader.nodeReads());
      tornReads.addAndGet(reader.tornReads());
      extentReads.addAndGet(reader.extentReads());
    }
    return new Hop(
        o.kind(),
        o.value(),
        o.pointer(),
        reader.lastHeader(),
        reader.nodeReads() + reader.extentReads());
  }

  private Hop serverHop(long p, byte[] key) {
    Wire.Reader r =
        new Wire.Reader(
            call(
                TreeProtocol.server(p),
                TreeProtocol.SEARCH,
                new Wire.Writer().i32(TreeProtocol.region(p)).bytes(key)),
            "tree search");
    return switch (r.u8("outcome")) {
      case TreeProtocol.VALUE -> new Hop(MeganodeReader.Outcome.Kind.VALUE, r.bytes("value"), 0);
      case TreeProtocol.ABSENT -> new Hop(MeganodeReader.Outcome.Kind.ABSENT, null, 0);
      case TreeProtocol.NEXT -> new Hop(MeganodeReader.Outcome.Kind.NEXT, null, r.i64("pointer"));
      case TreeProtocol.RIGHT -> new Hop(MeganodeReader.Outcome.Kind.RIGHT, null, r.i64("pointer"));
      default -> new Hop(MeganodeReader.Outcome.Kind.RESTART, null, 0);
    };
  }

  /**
   * Keeps the range of leaf meganode {@code p}, which just answered a get: from the header the
   * client-side search used, or, after a server-side search, from one one-sided read of its header
   * (once per meganode while the range stays cached; skipped when the cache is full, so that a full
   * cache does not cost a read per get).
   */
  private void learn(long p, Hop h) {
    Node header = h.header();
    if (header == null) {
      if (cache.bytes() + 4096 > cache.capacity()) {
        return;
      }
      MeganodeReader reader = new MeganodeReader(meganode(p));
      header = reader.header();
      nodeReads.addAndGet(reader.nodeReads());
      tornReads.addAndGet(reader.tornReads());
    }
    cache.learn(p, header);
  }

  /** Bound on server-side searches of one {@link #multiGet} in flight at once. */
  static final int MULTI_GET_WINDOW = 64;

  /**
   * The values of {@code keys} (null where absent), in order, searched by {@code path}. Server-side
   * (and {@link Path#AUTO}, which then goes server-side for the batch: the selector decides per
   * search, a batch is one decision it does not time), one {@code MULTI_SEARCH} per batch of {@link
   * TreeProtocol#MAX_MULTI_KEYS} keys goes to the root's server, which searches on through the
   * meganodes it holds; the keys it answers with a pointer elsewhere go on together, up to {@link
   * #MULTI_GET_WINDOW} RPCs in flight, one round per meganode (a key answered NEXT or RIGHT goes on
   * in the next round). Client-side, the keys are searched one after the other (each a handful of
   * one-sided reads with warm caches). Each value is linearizable on its own, not the batch as a
   * whole.
   */
  public List<byte[]> multiGet(List<byte[]> keys, Path path) {
    for (byte[] k : keys) {
      limits().key(k);
    }
    List<byte[]> out = new ArrayList<>(keys.size());
    if (path == Path.CLIENT) {
      for (byte[] k : keys) {
        out.add(get(k, path));
      }
      return out;
    }
    int n = keys.size();
    long[] at = new long[n];
    List<Integer> pending = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(null);
    }
    // First one MULTI_SEARCH per batch of keys to the root's server, which searches on through its
    // own meganodes; a key it answers with a pointer elsewhere (another server, a root that split)
    // goes on below, pipelined, from that pointer.
    for (int from = 0; from < n; from += TreeProtocol.MAX_MULTI_KEYS) {
      int to = Math.min(n, from + TreeProtocol.MAX_MULTI_KEYS);
      long p = root;
      Wire.Writer w = new Wire.Writer().i32(TreeProtocol.region(p)).i32(to - from);
      for (int i = from; i < to; i++) {
        w.bytes(keys.get(i));
      }
      Wire.Reader r =
          new Wire.Reader(
              call(TreeProtocol.server(p), TreeProtocol.MULTI_SEARCH, w), "tree multi-search");
      int answered = r.count("keys", to - from);
      if (answered != to - from) {
        throw new FerriteException(
            ErrorCode.INTERNAL,
            "multi-search: " + answered + " answers to " + (to - from) + " keys");
      }
      for (int i = from; i < to; i++) {
        outcome(r, i, p, out, at, pending);
      }
    }
    for (int round = 0; round < MAX_HOPS && !pending.isEmpty(); round++) {
      List<Integer> next = new ArrayList<>();
      for (int from = 0; from < pending.size(); from += MULTI_GET_WINDOW) {
        List<Integer> batch =
            pending.subList(from, Math.min(pending.size(), from + MULTI_GET_WINDOW));
        List<CompletableFuture<ByteBuffer>> answers = new ArrayList<>(batch.size());
        for (int i : batch) {
          rpcs.incrementAndGet();
          answers.add(
              owner
                  .ferrite()
                  .call(
                      TreeProtocol.server(at[i]),
                      TreeProtocol.SERVER_SERVICE,
                      TreeProtocol.SEARCH,
                      new Wire.Writer()
                          .i32(TreeProtocol.region(at[i]))
                          .bytes(keys.get(i))
                          .toBuffer()));
        }
        for (int j = 0; j < batch.size(); j++) {
          int i = batch.get(j);
          outcome(
              new Wire.Reader(Futures.join(answers.get(j)), "tree search"),
              i,
              at[i],
              out,
              at,
              next);
        }
      }
      pending = next;
    }
    if (!pending.isEmpty()) {
      throw tooManyHops("multiGet");
    }
    return out;
  }

  /**
   * One search outcome of key {@code i} of a {@link #multiGet}, searched at meganode {@code from}:
   * its value into {@code out}, or where to search it next into {@code at[i]}, and {@code i} into
   * {@code again}.
   */
  private void outcome(
      Wire.Reader r, int i, long from, List<byte[]> out, long[] at, List<Integer> again) {
    switch (r.u8("outcome")) {
      case TreeProtocol.VALUE -> out.set(i, r.bytes("value"));
      case TreeProtocol.ABSENT -> out.set(i, null);
      case TreeProtocol.NEXT -> {
        at[i] = r.i64("pointer");
        again.add(i);
      }
      case TreeProtocol.RIGHT -> {
        at[i] = right(from, r.i64("pointer"));
        again.add(i);
      }
      default -> {
        at[i] = refreshRoot();
        again.add(i);
      }
    }
  }

  /** {@link #multiGet(List, Path)} with {@link Path#AUTO}. */
  public List<byte[]> multiGet(List<byte[]> keys) {
    return multiGet(keys, Path.AUTO);
  }

  /** {@link #scan(byte[], byte[], int, Path)} with {@link Path#AUTO}. */
  public List<Map.Entry<byte[], byte[]>> scan(byte[] from, byte[] to, int limit) {
    return scan(from, to, limit, Path.AUTO);
  }

  /**
   * Up to {@code limit} pairs with keys from {@code from} (inclusive; null: the first key) to
   * {@code to} (exclusive; null: past the last), in unsigned byte order, across meganodes and
   * servers. Each leaf's pairs are read from one consistent copy of it (linearizable per leaf).
   *
   * @throws FerriteException INVALID_ARGUMENT for an empty or too long bound, {@code from > to}, or
   *     {@code limit <= 0}
   */
  public List<Map.Entry<byte[], byte[]>> scan(byte[] from, byte[] to, int limit, Path path) {
    limits().scan(from, to, limit);
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>();
    byte[] at = from == null ? new byte[0] : from;
    long p = root;
    for (int hop = 0; hop < MAX_HOPS; hop++) {
      MeganodeReader.ScanPart part;
      // AUTO: the selector's current choice for the meganode's server; a scan's time is no
      // sample of either path's queue (its length varies), so it is reported as no sample.
      Path use = path;
      if (path == Path.AUTO) {
        int server = TreeProtocol.server(p);
        PathSelector.Choice c = selector.choose(server);
        use = c.path();
        selector.finished(server, c, 0, 0, false);
      }
      if (use == Path.CLIENT) {
        MeganodeReader reader = new MeganodeReader(meganode(p));
        try {
          Node h = reader.header();
          if (!h.leaf()) {
            MeganodeReader.Outcome o = reader.search(at);
            p =
                switch (o.kind()) {
                  case NEXT -> o.pointer();
                  case RIGHT -> right(p, o.pointer());
                  default -> refreshRoot();
                };
            continue;
          }
          part = reader.scan(at, to, limit - out.size());
        } finally {
          nodeReads.addAndGet(reader.nodeReads());
          tornReads.addAndGet(reader.tornReads());
        }
      } else {
        Wire.Writer w =
            new Wire.Writer().i32(TreeProtocol.region(p)).bytes(at).u8(to == null ? 0 : 1);
        if (to != null) {
          w.bytes(to);
        }
        w.i32(limit - out.size());
        Wire.Reader r = new Wire.Reader(call(TreeProtocol.server(p), TreeProtocol.SCAN, w), "scan");
        int outcome = r.u8("outcome");
        if (outcome == TreeProtocol.NEXT) {
          p = r.i64("pointer");
          continue;
        }
        if (outcome == TreeProtocol.RIGHT) {
          p = right(p, r.i64("pointer"));
          continue;
        }
        if (outcome != TreeProtocol.PART) {
          p = refreshRoot();
          continue;
        }
        int n = r.count("pairs", 1 << 24);
        List<Map.Entry<byte[], byte[]>> pairs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          pairs.add(new SimpleImmutableEntry<>(r.bytes("key"), r.bytes("value")));
        }
        long next = r.i64("next");
        part = new MeganodeReader.ScanPart(pairs, next, next != 0 ? r.bytes("resume") : null);
      }
      out.addAll(part.pairs());
      if (part.next() == 0 || out.size() >= limit) {
        return out;
      }
      p = part.next();
      at = part.resume();
    }
    throw tooManyHops("scan");
  }

  // ------------------------------------------------------------------ writes

  /**
   * Inserts or replaces {@code key}'s value; true if the key was new. One RPC per meganode from the
   * root to the leaf meganode, which writes it.
   *
   * @throws FerriteException INVALID_ARGUMENT for a bad key or value (naming the limit)
   */
  public boolean put(byte[] key, byte[] value) {
    limits().key(key);
    if (value == null) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, "value: null (expected: bytes)");
    }
    return write(TreeProtocol.PUT, key, value) == TreeProtocol.CREATED;
  }

  /** Deletes {@code key}; true if it was present. */
  public boolean delete(byte[] key) {
    limits().key(key);
    return write(TreeProtocol.DELETE, key, null) == TreeProtocol.DELETED;
  }

  private int write(int opcode, byte[] key, byte[] value) {
    long p = root;
    int busy = 0;
    for (int hop = 0; hop < MAX_HOPS; hop++) {
      Wire.Writer w = new Wire.Writer().i32(TreeProtocol.region(p)).bytes(key);
      if (value != null) {
        w.bytes(value);
      }
      ByteBuffer answer;
      try {
        answer = call(TreeProtocol.server(p), opcode, w);
      } catch (FerriteException e) {
        // BUSY: nothing was written (a server's queue was full, or the key's half of a meganode
        // being split was held past the server's wait): the same write again, after a pause.
        if (e.code() != ErrorCode.BUSY || ++busy > MAX_BUSY) {
          throw e;
        }
        java.util.concurrent.locks.LockSupport.parkNanos(Math.min(busy, 10) * 1_000_000L);
        continue;
      }
      Wire.Reader r = new Wire.Reader(answer, "tree write");
      int outcome = r.u8("outcome");
      if (outcome == TreeProtocol.NEXT) {
        p = r.i64("pointer");
      } else if (outcome == TreeProtocol.RIGHT) {
        p = right(p, r.i64("pointer"));
      } else if (outcome == TreeProtocol.RESTART) {
        p = refreshRoot();
      } else {
        return outcome;
      }
    }
    throw tooManyHops("write");
  }

  /**
   * The tree's shape over every server that holds part of it: {meganodes, levels, splits, nodes in
   * use, node capacity, servers not counted, meganodes pending} (pending: adopted by a server for a
   * split to it whose source has not yet confirmed or dropped it; counted in the meganodes). Under
   * spread placement a tree's leaf meganodes live on several servers and no one server knows them
   * all (a guest's leaf may split on to a third server), so the client asks each server: STATS of
   * the home server (levels are its root's; failing here fails the call), then the other members'
   * STATS at once (one membership call to the master, then one RPC per server, all in flight
   * together; a server holding nothing of the tree answers NOT_FOUND, counted 0). A member the
   * master does not list ALIVE (not asked), or one that does not answer, is counted in the sixth
   * element (servers not counted), so a caller can say the sum is short instead of printing an
   * undercount as the whole.
   */
  public long[] stats() {
    long[] sum = statsOf(call(info.server(), TreeProtocol.STATS, new Wire.Writer().i64(info.id())));
    long[] out = {sum[0], sum[1], sum[2], sum[3], sum[4], 0, sum[5]};
    List<CompletableFuture<ByteBuffer>> asked = new ArrayList<>();
    for (MemberInfo m : owner.ferrite().members()) {
      if (m.serverId() == info.server()) {
        continue;
      }
      if (m.state() != ServerState.ALIVE) {
        out[5]++;
        continue;
      }
      rpcs.incrementAndGet();
      try {
        asked.add(
            owner
                .ferrite()
                .call(
                    m.serverId(), TreeProtocol.SERVER_SERVICE, TreeProtocol.STATS, statsRequest()));
      } catch (FerriteException e) {
        out[5]++; // no connection to it
      }
    }
    for (CompletableFuture<ByteBuffer> f : asked) {
      long[] s;
      try {
        s = statsOf(Futures.join(f));
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          out[5]++;
        }
        continue;
      }
      for (int i : new int[] {0, 2, 3, 4}) {
        out[i] += s[i];
      }
      out[6] += s[5];
    }
    return out;
  }

  private ByteBuffer statsRequest() {
    return new Wire.Writer().i64(info.id()).toBuffer();
  }

  private static long[] statsOf(ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "stats");
    return new long[] {
      r.i32("meganodes"),
      r.i32("levels"),
      r.i64("splits"),
      r.i64("used"),
      r.i64("capacity"),
      r.i32("pending")
    };
  }

  /** Forgets the root learned so far and asks the directory again. */
  public void refresh() {
    refreshRoot();
  }

  private FerriteException tooManyHops(String what) {
    return new FerriteException(
        ErrorCode.BUSY, what + " of tree " + info.name() + ": " + MAX_HOPS + " meganodes visited");
  }
}
