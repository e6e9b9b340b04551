package io.ferrite.memory.master;

import io.ferrite.kernel.proto.BlockRef;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A namespace (RStore §III-B): its reserve of blocks carved into chunks of {@code chunkSize}, the
 * free ones per server (for striping), and its allocations. Changed only by {@link MemoryState}'s
 * records, under the master's metadata lock.
 */
final class Ns {
  final long id;
  final String name;
  final int chunkSize;
  long nextAddress;
  int roundRobin;
  final Map<Key, BlockRef> blocks = new LinkedHashMap<>();
  final Map<Key, Integer> freeInBlock = new HashMap<>();
  final TreeMap<Integer, TreeSet<Chunk>> free = new TreeMap<>();
  final TreeMap<Long, Alloc> allocs = new TreeMap<>();
  long freeChunks;

  Ns(long id, String name, int chunkSize, long nextAddress) {
    this.id = id;
    this.name = name;
    this.chunkSize = chunkSize;
    this.nextAddress = nextAddress;
  }

  long reservedBytes() {
    long sum = 0;
    for (BlockRef b : blocks.values()) {
      sum += b.length();
    }
    return sum;
  }

  int chunksPer(BlockRef b) {
    return (int) (b.length() / chunkSize);
  }

  void addBlock(Key k, BlockRef b) {
    if (blocks.putIfAbsent(k, b) != null) {
      return;
    }
    int per = chunksPer(b);
    TreeSet<Chunk> set = free.computeIfAbsent(k.server(), s -> new TreeSet<>());
    for (int i = 0; i < per; i++) {
      set.add(new Chunk(k, (long) i * chunkSize));
    }
    freeInBlock.put(k, per);
    freeChunks += per;
  }

  BlockRef removeBlock(Key k) {
    BlockRef b = blocks.remove(k);
    if (b == null) {
      return null;
    }
    int per = chunksPer(b);
    TreeSet<Chunk> set = free.get(k.server());
    for (int i = 0; i < per; i++) {
      if (set != null && set.remove(new Chunk(k, (long) i * chunkSize))) {
        freeChunks--;
      }
    }
    if (set != null && set.isEmpty()) {
      free.remove(k.server());
    }
    freeInBlock.remove(k);
    return b;
  }

  void takeChunk(Chunk c) {
    TreeSet<Chunk> set = free.get(c.block().server());
    if (set != null && set.remove(c)) {
      freeChunks--;
      freeInBlock.merge(c.block(), -1, Integer::sum);
      if (set.isEmpty()) {
        free.remove(c.block().server());
      }
    }
  }

  void giveChunk(Chunk c) {
    if (!blocks.containsKey(c.block())) {
      return;
    }
    if (free.computeIfAbsent(c.block().server(), s -> new TreeSet<>()).add(c)) {
      freeChunks++;
      freeInBlock.merge(c.block(), 1, Integer::sum);
    }
  }

  // ---------------------------------------------------------------- decisions (no side effects)

  /** Picks {@code n} free chunks of {@code ns}, one server after the other (striping, §III-C). */
  List<Chunk> pickChunks(int n) {
    List<Chunk> out = new ArrayList<>(n);
    List<Integer> servers = new ArrayList<>(free.keySet());
    Map<Integer, java.util.Iterator<Chunk>> its = new HashMap<>();
    for (Integer s : servers) {
      its.put(s, free.get(s).iterator());
    }
    int i = Math.floorMod(roundRobin, Math.max(1, servers.size()));
    while (out.size() < n && !its.isEmpty()) {
      Integer s = servers.get(i % servers.size());
      java.util.Iterator<Chunk> it = its.get(s);
      if (it != null) {
        if (it.hasNext()) {
          out.add(it.next());
        } else {
          its.remove(s);
        }
      }
      i++;
    }
    roundRobin = i;
    return out;
  }

  /** Whole blocks of {@code ns} with no chunk allocated, up to {@code n}. */
  List<Key> freeBlocks(int n) {
    List<Key> out = new ArrayList<>();
    for (Map.Entry<Key, Integer> e : freeInBlock.entrySet()) {
      if (out.size() == n) {
        break;
      }
      if (e.getValue() == chunksPer(blocks.get(e.getKey()))) {
        out.add(e.getKey());
      }
    }
    out.sort(null);
    return out;
  }
}
