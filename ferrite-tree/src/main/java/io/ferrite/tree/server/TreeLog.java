package io.ferrite.tree.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.tree.TreeProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * The records of the tree face's operation log (the kv face's {@link io.ferrite.kernel.log.OpLog}
 * file format and group commit), and the replay that turns them back into meganode contents.
 *
 * <p>Records name meganodes by their <b>meganode id</b>, the low word of a meganode pointer ({@link
 * TreeProtocol#pointer}): a number the server hands out and keeps across restarts, not a region id
 * (regions are new after a restart). Every record is {@code u8 type} then:
 *
 * <pre>
 *  TREE         i64 tree                                   a tree created on this server
 *  MEGANODE     i32 id, i64 tree, i32 level, bytes low,    a meganode made (empty), its header
 *               u8 hasHigh [bytes high], i64 link
 *  PUT          i32 id, bytes key, bytes value             a leaf meganode's pair written
 *  CHILD        i32 id, bytes key, i64 child               an internal meganode's entry written
 *  DELETE       i32 id, bytes key                          a pair deleted
 *  SPLIT_BEGIN  i32 source, bytes key, i32 target          Cell §2.2's logged split start
 *  SPLIT_END    i32 source, bytes key, i32 target          ... and end: the right half moved
 *  SPLIT_ABORT  i32 source, bytes key, i32 target          the split gave up (target freed)
 *  ROOT         i64 tree, i64 root pointer                 the tree's root meganode
 *  DROP         i64 tree                                   the tree and its meganodes freed
 *  NEXT_ID      i32 next                                   ids below are used (compaction)
 *  GUEST        i64 tree, i32 home                         a tree homed on server home, some of
 *                                                          whose leaf meganodes are here
 *  R_BEGIN      i32 source, bytes key, i32 token,          a split of source into a meganode on
 *               i32 target server                          another server begins (token: an id of
 *                                                          this server naming the split)
 *  R_END        i32 source, bytes key, i32 token,          ... ended: the pairs from key up are on
 *               i64 target pointer                         the target (owed: its CONFIRM)
 *  R_ABORT      i32 source, bytes key, i32 token,          ... gave up (owed: a DROP_ADOPTED)
 *               i32 target server
 *  R_DONE       i32 token                                  the owed CONFIRM or DROP was answered
 *  OWE          i32 token, u8 confirm, i64 target          an owed CONFIRM (1) or DROP (0) (the
 *                                                          compaction's form of the above)
 *  ADOPTED      i32 id, i32 source server, i32 token       meganode id (just made) holds a remote
 *                                                          split's right half: pending
 *  CONFIRMED    i32 id                                     ... no longer pending (its source ended)
 *  FORGET       i32 id                                     ... dropped (its source did not end)
 *  LINKED       i32 id                                     meganode id is linked to from another
 *                                                          server (the compaction's form of what
 *                                                          R_END implies: see below)
 * </pre>
 *
 * The remote records are docs/TREE.md's "Meganodes on several servers" protocol: the source logs
 * R_BEGIN before it asks the target, R_END once the target answered the copy, and only then
 * relinks; the target logs MEGANODE and ADOPTED before the copied pairs (PUT), so a crash on either
 * side leaves a pending meganode its source resolves, never an orphan. R_BEGIN and R_END order the
 * source's records as SPLIT_BEGIN and SPLIT_END do (below): R_END moves nothing out of the source
 * at the replay but drops its pairs from the key up, which the target holds.
 *
 * <p>A meganode here may be reached only from another server: when x splits into a meganode on
 * another server, that meganode takes x's old right link, so x's old right neighbour, if it is on
 * this server, is reached through the other server from then on (and through its parent only once
 * the separator is in). The replay counts such a meganode as reached whatever this server's own
 * pointers say: R_END marks x's old link so, and a compaction keeps the mark as LINKED. Without it
 * a meganode that holds acknowledged pairs would be dropped as unreachable.
 *
 * <p>A split's copy into the target is not logged pair by pair: SPLIT_END moves the pairs from the
 * key up out of the source, and sets the source's high key and link. A SPLIT_BEGIN with no
 * SPLIT_END before the log ends (or before the next split of the same source) is a split the server
 * died in: the replay deletes its target and keeps the source whole (its right half was never
 * unlinked).
 *
 * <h2>Writes between SPLIT_BEGIN and SPLIT_END</h2>
 *
 * During a split only the source's right half (keys from the split key up) is closed to writes
 * (Cell §2.2); writes to its left half go on, and their PUT and DELETE records, naming the source,
 * may fall between the split's SPLIT_BEGIN and SPLIT_END, and between SPLIT_END and the relink. The
 * replay is exact either way because of the order the service keeps:
 *
 * <ul>
 *   <li>every right-half write to the source is logged before SPLIT_BEGIN: a write appends its
 *       record under the source's structure lock held shared, and the split closes the right half
 *       under it held exclusively before it appends SPLIT_BEGIN ({@link Meganode#beginSplit});
 *   <li>between SPLIT_BEGIN and the relink the source has records of left-half keys only, and the
 *       target none (it is unreachable); after the relink a right-half key is answered RIGHT by the
 *       source, so its writes name the target and follow SPLIT_END.
 * </ul>
 *
 * So at SPLIT_END the source's image holds, from the key up, exactly the pairs the split copied,
 * which SPLIT_END moves; the left half's records, before or after it, stay in the source, where the
 * live server wrote them. A split undone (no SPLIT_END, or SPLIT_ABORT) keeps the source whole with
 * the left-half writes applied, as the server had it: its right half was never unlinked there.
 */
final class TreeLog {
  static final int TREE = 1;
  static final int MEGANODE = 2;
  static final int PUT = 3;
  static final int CHILD = 4;
  static final int DELETE = 5;
  static final int SPLIT_BEGIN = 6;
  static final int SPLIT_END = 7;
  static final int SPLIT_ABORT = 8;
  static final int ROOT = 9;
  static final int DROP = 10;
  static final int NEXT_ID = 11;
  static final int GUEST = 12;
  static final int R_BEGIN = 13;
  static final int R_END = 14;
  static final int R_ABORT = 15;
  static final int R_DONE = 16;
  static final int OWE = 17;
  static final int ADOPTED = 18;
  static final int CONFIRMED = 19;
  static final int FORGET = 20;
  static final int LINKED = 21;

  private TreeLog() {}

  static byte[] tree(long tree) {
    return new Wire.Writer().u8(TREE).i64(tree).toArray();
  }

  static byte[] meganode(int id, long tree, int level, byte[] low, byte[] high, long link) {
    Wire.Writer w = new Wire.Writer().u8(MEGANODE).i32(id).i64(tree).i32(level).bytes(low);
    w.u8(high == null ? 0 : 1);
    if (high != null) {
      w.bytes(high);
    }
    return w.i64(link).toArray();
  }

  static byte[] put(int id, byte[] key, byte[] value) {
    return new Wire.Writer().u8(PUT).i32(id).bytes(key).bytes(value).toArray();
  }

  static byte[] child(int id, byte[] key, long child) {
    return new Wire.Writer().u8(CHILD).i32(id).bytes(key).i64(child).toArray();
  }

  static byte[] delete(int id, byte[] key) {
    return new Wire.Writer().u8(DELETE).i32(id).bytes(key).toArray();
  }

  static byte[] split(int type, int source, byte[] key, int target) {
    return new Wire.Writer().u8(type).i32(source).bytes(key).i32(target).toArray();
  }

  static byte[] root(long tree, long root) {
    return new Wire.Writer().u8(ROOT).i64(tree).i64(root).toArray();
  }

  static byte[] drop(long tree) {
    return new Wire.Writer().u8(DROP).i64(tree).toArray();
  }

  static byte[] nextId(int next) {
    return new Wire.Writer().u8(NEXT_ID).i32(next).toArray();
  }

  static byte[] guest(long tree, int home) {
    return new Wire.Writer().u8(GUEST).i64(tree).i32(home).toArray();
  }

  static byte[] remoteSplit(int type, int source, byte[] key, int token, long target) {
    Wire.Writer w = new Wire.Writer().u8(type).i32(source).bytes(key).i32(token);
    return (type == R_END ? w.i64(target) : w.i32((int) target)).toArray();
  }

  static byte[] remoteDone(int token) {
    return new Wire.Writer().u8(R_DONE).i32(token).toArray();
  }

  static byte[] owe(int token, boolean confirm, long target) {
    return new Wire.Writer().u8(OWE).i32(token).u8(confirm ? 1 : 0).i64(target).toArray();
  }

  static byte[] adopted(int id, int source, int token) {
    return new Wire.Writer().u8(ADOPTED).i32(id).i32(source).i32(token).toArray();
  }

  static byte[] confirmed(int id) {
    return new Wire.Writer().u8(CONFIRMED).i32(id).toArray();
  }

  static byte[] forget(int id) {
    return new Wire.Writer().u8(FORGET).i32(id).toArray();
  }

  static byte[] linked(int id) {
    return new Wire.Writer().u8(LINKED).i32(id).toArray();
  }

  /** One meganode as the log rebuilds it: its header and its entries (values or child pointers). */
  static final class Image {
    final int id;
    final long tree;
    final int level;
    final byte[] low;
    byte[] high;
    long link;

    /** ADOPTED: the source server and token of the remote split that made it; -1 if local. */
    int source = -1;

    int token;

    /** ADOPTED and not yet CONFIRMED. */
    boolean pending;

    /** Values ({@code byte[]}) of a leaf meganode, child pointers ({@code Long}) of an internal. */
    final TreeMap<byte[], Object> entries = new TreeMap<>(Arrays::compareUnsigned);

    Image(int id, long tree, int level, byte[] low, byte[] high, long link) {
      this.id = id;
      this.tree = tree;
      this.level = level;
      this.low = low;
      this.high = high;
      this.link = link;
    }
  }

  private record OpenSplit(byte[] key, int target) {}

  /**
   * Applies records in log order to images of the meganodes ({@link #accept}), then {@link #finish}
   * settles what a crash left open. Single-threaded (the service's start).
   */
  static final class Replay implements Consumer<ByteBuffer> {
    /** Trees on this server and their root pointers (0 until the ROOT record). */
    final Map<Long, Long> roots = new LinkedHashMap<>();

    final Map<Integer, Image> meganodes = new TreeMap<>();

    /** Guest trees (GUEST): tree id to its home server. */
    final Map<Long, Integer> guests = new LinkedHashMap<>();

    /** Remote splits begun and not ended: token to (source, key, target server). */
    private final Map<Integer, long[]> remoteOpen = new HashMap<>();

    /** Owed CONFIRMs (token to the target meganode's pointer) and DROPs (token to server). */
    final Map<Integer, Long> owedConfirms = new LinkedHashMap<>();

    final Map<Integer, Integer> owedDrops = new LinkedHashMap<>();

    /**
     * Meganodes here that a meganode on another server links to (R_END's old link, LINKED):
     * reached, whatever this server's pointers say.
     */
    final Set<Integer> linkedFromAfar = new HashSet<>();

    private final Map<Integer, OpenSplit> open = new HashMap<>();
    int nextId = 1;
    long records;

    /** Splits the replay found unfinished (their targets deleted), for the log and for tests. */
    final List<String> unfinished = new ArrayList<>();

    /** Meganodes no root reaches (a new root the crash kept from being recorded), deleted. */
    int unreachable;

    /** The server whose log this is: its pointers (links, children, roots) name it. */
    private final int server;

    @Override
    public void accept(ByteBuffer body) {
      records++;
      Wire.Reader r = new Wire.Reader(body, "tree log record " + records);
      int type = r.u8("type");
      switch (type) {
        case TREE -> roots.putIfAbsent(r.i64("tree"), 0L);
        case MEGANODE -> {
          int id = r.i32("id");
          long tree = r.i64("tree");
          int level = r.i32("level");
          byte[] low = r.bytes("low");
          byte[] high = r.u8("hasHigh") != 0 ? r.bytes("high") : null;
          long link = r.i64("link");
          meganodes.put(id, new Image(id, tree, level, low, high, link));
          nextId = Math.max(nextId, id + 1);
        }
        case PUT -> {
          Image m = image(r.i32("id"));
          byte[] key = r.bytes("key");
          m.entries.put(key, r.bytes("value"));
        }
        case CHILD -> {
          Image m = image(r.i32("id"));
          byte[] key = r.bytes("key");
          m.entries.put(key, r.i64("child"));
        }
        case DELETE -> {
          Image m = image(r.i32("id"));
          m.entries.remove(r.bytes("key"));
        }
        case SPLIT_BEGIN -> {
          int source = r.i32("source");
          byte[] key = r.bytes("key");
          int target = r.i32("target");
          OpenSplit before = open.put(source, new OpenSplit(key, target));
          if (before != null) {
            orphan(source, before); // the server died in that one and split again after
          }
        }
        case SPLIT_END -> {
          int source = r.i32("source");
          byte[] key = r.bytes("key");
          int target = r.i32("target");
          open.remove(source);
          Image x = image(source);
          Image y = image(target);
          Map<byte[], Object> moved = x.entries.tailMap(key, true);
          y.entries.putAll(moved);
          moved.clear();
          x.high = key;
          x.link = pointerOf(target);
        }
        case SPLIT_ABORT -> {
          int source = r.i32("source");
          r.bytes("key");
          int target = r.i32("target");
          open.remove(source);
          meganodes.remove(target);
        }
        case ROOT -> {
          long tree = r.i64("tree");
          roots.put(tree, r.i64("root"));
        }
        case DROP -> {
          long tree = r.i64("tree");
          roots.remove(tree);
          guests.remove(tree);
          meganodes.values().removeIf(m -> m.tree == tree);
        }
        case NEXT_ID -> nextId = Math.max(nextId, r.i32("next"));
        case GUEST -> {
          long tree = r.i64("tree");
          guests.put(tree, r.i32("home"));
        }
        case R_BEGIN -> {
          int source = r.i32("source");
          r.bytes("key");
          int token = r.i32("token");
          remoteOpen.put(token, new long[] {source, r.i32("target")});
          nextId = Math.max(nextId, token + 1);
        }
        case R_END -> {
          int source = r.i32("source");
          byte[] key = r.bytes("key");
          int token = r.i32("token");
          long target = r.i64("target");
          remoteOpen.remove(token);
          owedConfirms.put(token, target);
          // The pairs from key up live on the target now; the source ends at key (Cell §2.2).
          Image x = image(source);
          if (x.link != 0 && TreeProtocol.server(x.link) == server) {
            // The target took x's old link: that meganode is reached through the other server.
            linkedFromAfar.add(TreeProtocol.region(x.link));
          }
          x.entries.tailMap(key, true).clear();
          x.high = key;
          x.link = target;
        }
        case R_ABORT -> {
          r.i32("source");
          r.bytes("key");
          int token = r.i32("token");
          int target = r.i32("target");
          remoteOpen.remove(token);
          owedDrops.put(token, target);
        }
        case R_DONE -> {
          int token = r.i32("token");
          owedConfirms.remove(token);
          owedDrops.remove(token);
        }
        case OWE -> {
          int token = r.i32("token");
          boolean confirm = r.u8("confirm") != 0;
          long target = r.i64("target");
          if (confirm) {
            owedConfirms.put(token, target);
          } else {
            owedDrops.put(token, (int) target);
          }
        }
        case ADOPTED -> {
          Image m = image(r.i32("id"));
          m.source = r.i32("source");
          m.token = r.i32("token");
          m.pending = true;
        }
        case CONFIRMED -> {
          // A meganode freed since (its tree dropped) may still be confirmed: nothing to do.
          Image m = meganodes.get(r.i32("id"));
          if (m != null) {
            m.pending = false;
          }
        }
        case FORGET -> meganodes.remove(r.i32("id"));
        case LINKED -> linkedFromAfar.add(r.i32("id"));
        default ->
            throw new FerriteException(
                ErrorCode.INTERNAL, "tree log record " + records + ": unknown type " + type);
      }
      r.end();
    }

    /** The pointer of meganode {@code id} on this server. */
    private long pointerOf(int id) {
      return TreeProtocol.pointer(server, id);
    }

    private Image image(int id) {
      Image m = meganodes.get(id);
      if (m == null) {
        throw new FerriteException(
            ErrorCode.INTERNAL,
            "tree log record " + records + ": meganode " + id + " was never made (corrupt log)");
      }
      return m;
    }

    private void orphan(int source, OpenSplit s) {
      meganodes.remove(s.target());
      unfinished.add(
          "split of meganode "
              + source
              + " into "
              + s.target()
              + " did not finish: "
              + s.target()
              + " deleted, "
              + source
              + " kept whole");
    }

    /** Replays {@code serverId}'s records: its pointers (links, roots) name that server. */
    Replay(int serverId) {
      this.server = serverId;
    }

    /**
     * Settles the end of the log: every split begun and not ended is undone (its target deleted;
     * nothing had been unlinked from its source, whose pairs the log still holds), then meganodes
     * that neither a tree root, nor an adopted meganode, nor a meganode on another server reaches
     * (by child pointers and right links) are deleted: a new root meganode made just before the
     * crash, whose ROOT record never came; what only a forgotten adoption reached.
     */
    void finish() {
      for (Map.Entry<Integer, OpenSplit> e : new ArrayList<>(open.entrySet())) {
        orphan(e.getKey(), e.getValue());
      }
      open.clear();
      for (Map.Entry<Integer, long[]> e : remoteOpen.entrySet()) {
        // Begun, never ended: the source kept its pairs (the relink comes after R_END); whatever
        // the target made is dropped, once it answers.
        owedDrops.put(e.getKey(), (int) e.getValue()[1]);
        unfinished.add(
            "split of meganode "
                + e.getValue()[0]
                + " into a meganode of server "
                + e.getValue()[1]
                + " did not finish: "
                + e.getValue()[0]
                + " kept whole, the target's copy dropped");
      }
      remoteOpen.clear();
      for (Map.Entry<Long, Long> e : roots.entrySet()) {
        if (e.getValue() != 0 && TreeProtocol.server(e.getValue()) != server) {
          throw new FerriteException(
              ErrorCode.INTERNAL,
              "tree log: tree "
                  + e.getKey()
                  + "'s root names server "
                  + TreeProtocol.server(e.getValue())
                  + ", but this is server "
                  + server
                  + " (a log of another server's directory?)");
        }
      }
      roots.values().removeIf(p -> p == 0 || !meganodes.containsKey(TreeProtocol.region(p)));
      Set<Integer> reached = new HashSet<>();
      ArrayDeque<Integer> todo = new ArrayDeque<>();
      for (long p : roots.values()) {
        todo.add(TreeProtocol.region(p));
      }
      for (Image m : meganodes.values()) {
        if (m.source >= 0) {
          todo.add(m.id); // a remote split's right half: reached from its source's server
        }
      }
      todo.addAll(linkedFromAfar); // reached from another server's link (ids never made: skipped)
      while (!todo.isEmpty()) {
        int id = todo.poll();
        Image m = meganodes.get(id);
        if (m == null || !reached.add(id)) {
          continue;
        }
        if (m.link != 0 && TreeProtocol.server(m.link) == server) {
          todo.add(TreeProtocol.region(m.link));
        }
        if (m.level > 0) {
          for (Object child : m.entries.values()) {
            if (TreeProtocol.server((Long) child) == server) {
              todo.add(TreeProtocol.region((Long) child));
            }
          }
        }
      }
      int before = meganodes.size();
      meganodes.keySet().retainAll(reached);
      unreachable = before - meganodes.size();
      for (Image m : meganodes.values()) {
        if (m.level > 0) {
          // A child pointer whose split was undone: drop it (its keys are back in the source).
          m.entries
              .values()
              .removeIf(
                  c ->
                      TreeProtocol.server((Long) c) == server
                          && !meganodes.containsKey(TreeProtocol.region((Long) c)));
        }
      }
    }
  }
}
