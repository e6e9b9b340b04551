package io.ferrite.nodes;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Lookups a client keeps for its gets, each checked before use against the master's version words
 * of the nodes on its path (one-sided reads of the region the master serves, {@code LookupVersions}
 * on the master): all words unchanged means no change to any of those nodes has begun since the
 * lookup, so the kept answer is the current one, and a get that uses it is linearizable at the
 * reads (docs/NODES.md, "Cached gets"). A changed word, or any failure to read one (a restarted
 * master serves a new region), drops the entry: the get asks the master.
 *
 * <p>Used only where those reads cost a memory access: a master reached over shm (or the local
 * fabric); over tcp each would be a round trip, dearer than the one lookup RPC it saves.
 */
final class LookupCache {
  /** Entries kept at most; beyond, the cache starts over. */
  static final int MAX_ENTRIES = 65_536;

  /** {@code nodes.cached.gets=false}: every get asks the master (for comparisons). */
  private final boolean on;

  /** A kept lookup: the node, and the words of the path's nodes when it was read. */
  record Entry(NodeInfo node, RegionRef region, int[] slots, long[] words) {}

  private final FerriteClient client;
  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
  private volatile boolean masterKnowsVersions = true;

  LookupCache(FerriteClient client) {
    this.client = client;
    this.on = NodesConfig.cachedGets(client.config());
  }

  /** Whether gets should use the cache now. */
  boolean enabled() {
    if (!on || !masterKnowsVersions) {
      return false;
    }
    String f = client.masterFabric();
    return f.equals("shm") || f.equals("local");
  }

  /** The master answered LOOKUP_VERSIONED with UNKNOWN_OPCODE: an older master. */
  void unsupported() {
    masterKnowsVersions = false;
    entries.clear();
  }

  /** The kept node at {@code path} if it is still current, else null. */
  NodeInfo current(String path) {
    Entry e = entries.get(path);
    if (e == null) {
      return null;
    }
    if (stillCurrent(e)) {
      return e.node;
    }
    entries.remove(path, e);
    return null;
  }

  private boolean stillCurrent(Entry e) {
    FabricConnection c;
    try {
      c = client.masterStub().connection();
    } catch (FerriteException x) {
      return false;
    }
    ByteBuffer word = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < e.slots.length; i++) {
      word.clear();
      try {
        Futures.join(c.read(e.region, 8L * e.slots[i], word));
      } catch (FerriteException x) {
        // A restarted master (new region, new rkey), a lost connection: nothing kept is usable.
        entries.clear();
        return false;
      }
      if (word.getLong(0) != e.words[i]) {
        return false;
      }
    }
    return true;
  }

  /**
   * Reads the rest of a LOOKUP_VERSIONED answer after its node, and keeps the node if the master
   * said it may be kept.
   */
  void keep(String path, NodeInfo node, Wire.Reader r) {
    if (r.u8("cacheable") != 1) {
      r.end();
      entries.remove(path);
      return;
    }
    int regionId = r.i32("regionId");
    long rkey = r.i64("rkey");
    long length = r.i64("length");
    int n = r.count("count", 4096);
    int[] slots = new int[n];
    long[] words = new long[n];
    for (int i = 0; i < n; i++) {
      slots[i] = r.i32("slot");
      words[i] = r.i64("word");
      if (slots[i] < 0 || 8L * slots[i] + 8 > length) {
        throw new FerriteException(
            ErrorCode.PROTOCOL, "version slot " + slots[i] + " outside a region of " + length);
      }
    }
    r.end();
    if (entries.size() >= MAX_ENTRIES) {
      entries.clear();
    }
    entries.put(path, new Entry(node, new RegionRef(0, regionId, rkey, length), slots, words));
  }

  /** Drops what is kept for {@code path} (its value did not verify). */
  void forget(String path) {
    entries.remove(path);
  }

  /** Number of kept lookups (for tests). */
  int size() {
    return entries.size();
  }
}
