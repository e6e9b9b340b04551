package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

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
 *       extent.
 * </ul>
 *
 * Writes always go by RPC, one per meganode traversed, the last to the leaf meganode's server. The
 * paper's locality selector (which picks the path per meganode from measured latencies) and the
 * client's node cache are not built: the caller picks the path. Thread-safe.
 */
public final class Tree {
  /** The search path of a read. */
  public enum Path {
    /** Searches run on the servers, one RPC per meganode. */
    SERVER,
    /** Searches run here, over one-sided reads of the servers' nodes. */
    CLIENT
  }

  /** Bound on meganodes visited by one operation (right links and restarts included). */
  static final int MAX_HOPS = 100_000;

  private final TreeClient owner;
  private final TreeClient.TreeInfo info;
  private final Map<Long, RemoteMeganode> meganodes = new ConcurrentHashMap<>();
  private final AtomicLong rpcs = new AtomicLong();
  private final AtomicLong nodeReads = new AtomicLong();
  private final AtomicLong tornReads = new AtomicLong();
  private volatile long root;
  private volatile long lastRefresh;
  private volatile TreeLimits limits;

  Tree(TreeClient owner, TreeClient.TreeInfo info) {
    this.owner = owner;
    this.info = info;
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

  /** The value of {@code key}, or null, searched server-side. */
  public byte[] get(byte[] key) {
    return get(key, Path.SERVER);
  }

  /** The value of {@code key}, or null, searched by {@code path}. Linearizable. */
  public byte[] get(byte[] key, Path path) {
    limits().key(key);
    long p = root;
    for (int hop = 0; hop < MAX_HOPS; hop++) {
      if (path == Path.CLIENT) {
        MeganodeReader reader = new MeganodeReader(meganode(p));
        MeganodeReader.Outcome o;
        try {
          o = reader.search(key);
        } finally {
          nodeReads.addAndGet(reader.nodeReads());
          tornReads.addAndGet(reader.tornReads());
        }
        switch (o.kind()) {
          case VALUE:
            return o.value();
          case ABSENT:
            return null;
          case NEXT:
            p = o.pointer();
            continue;
          case RIGHT:
            p = right(p, o.pointer());
            continue;
          default:
            p = refreshRoot();
            continue;
        }
      }
      Wire.Reader r =
          new Wire.Reader(
              call(
                  TreeProtocol.server(p),
                  TreeProtocol.SEARCH,
                  new Wire.Writer().i32(TreeProtocol.region(p)).bytes(key)),
              "tree search");
      switch (r.u8("outcome")) {
        case TreeProtocol.VALUE:
          return r.bytes("value");
        case TreeProtocol.ABSENT:
          return null;
        case TreeProtocol.NEXT:
          p = r.i64("pointer");
          continue;
        case TreeProtocol.RIGHT:
          p = right(p, r.i64("pointer"));
          continue;
        default:
          p = refreshRoot();
      }
    }
    throw tooManyHops("get");
  }

  /** The values of {@code keys} (null where absent), in order, searched by {@code path}. */
  public List<byte[]> multiGet(List<byte[]> keys, Path path) {
    for (byte[] k : keys) {
      limits().key(k);
    }
    List<byte[]> out = new ArrayList<>(keys.size());
    if (path == Path.SERVER) {
      // One MULTI_SEARCH per batch to the root's server, which searches on through its own
      // meganodes; a key it answers with a pointer elsewhere (another server, a root that split)
      // goes on alone, as a get.
      for (int from = 0; from < keys.size(); from += TreeProtocol.MAX_MULTI_KEYS) {
        List<byte[]> batch =
            keys.subList(from, Math.min(keys.size(), from + TreeProtocol.MAX_MULTI_KEYS));
        long p = root;
        Wire.Writer w = new Wire.Writer().i32(TreeProtocol.region(p)).i32(batch.size());
        for (byte[] k : batch) {
          w.bytes(k);
        }
        Wire.Reader r =
            new Wire.Reader(
                call(TreeProtocol.server(p), TreeProtocol.MULTI_SEARCH, w), "tree multi-search");
        int n = r.count("keys", batch.size());
        if (n != batch.size()) {
          throw new FerriteException(
              ErrorCode.INTERNAL, "multi-search: " + n + " answers to " + batch.size() + " keys");
        }
        for (byte[] k : batch) {
          int outcome = r.u8("outcome");
          if (outcome == TreeProtocol.VALUE) {
            out.add(r.bytes("value"));
          } else if (outcome == TreeProtocol.ABSENT) {
            out.add(null);
          } else {
            if (outcome == TreeProtocol.NEXT || outcome == TreeProtocol.RIGHT) {
              r.i64("pointer");
            }
            out.add(get(k, path));
          }
        }
      }
      return out;
    }
    for (byte[] k : keys) {
      out.add(get(k, path));
    }
    return out;
  }

  /** {@link #multiGet(List, Path)} server-side. */
  public List<byte[]> multiGet(List<byte[]> keys) {
    return multiGet(keys, Path.SERVER);
  }

  /** {@link #scan(byte[], byte[], int, Path)} server-side. */
  public List<Map.Entry<byte[], byte[]>> scan(byte[] from, byte[] to, int limit) {
    return scan(from, to, limit, Path.SERVER);
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
      if (path == Path.CLIENT) {
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
    for (int hop = 0; hop < MAX_HOPS; hop++) {
      Wire.Writer w = new Wire.Writer().i32(TreeProtocol.region(p)).bytes(key);
      if (value != null) {
        w.bytes(value);
      }
      Wire.Reader r = new Wire.Reader(call(TreeProtocol.server(p), opcode, w), "tree write");
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

  /** Meganodes, levels, splits, nodes in use and capacity, from the tree's server. */
  public long[] stats() {
    Wire.Reader r =
        new Wire.Reader(
            call(info.server(), TreeProtocol.STATS, new Wire.Writer().i64(info.id())), "stats");
    return new long[] {
      r.i32("meganodes"), r.i32("levels"), r.i64("splits"), r.i64("used"), r.i64("capacity")
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
