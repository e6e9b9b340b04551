package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.master.MasterEvent.BlockKey;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Sizes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * Chooses blocks to hand out: storage classes in preference order, and within a class round-robin
 * across the ALIVE servers that have free blocks of it (those a location hint names first). Only
 * plans: the caller journals and applies the choice. The round-robin cursor is transient (not
 * journaled). Guarded by the {@link MasterState} lock.
 */
final class BlockAllocator {
  private final TreeMap<Integer, ServerEntry> servers;
  private final long blockSize;
  private final List<String> classOrder = new ArrayList<>(MasterState.DEFAULT_CLASSES);
  private final Map<String, Integer> lastServed = new HashMap<>();

  BlockAllocator(TreeMap<Integer, ServerEntry> servers, long blockSize) {
    this.servers = servers;
    this.blockSize = blockSize;
  }

  /** Adds a user-defined class at the end of the preference order. */
  void knowClass(String cls) {
    if (!classOrder.contains(cls)) {
      classOrder.add(cls);
    }
  }

  List<String> classes() {
    return List.copyOf(classOrder);
  }

  /**
   * Picks {@code count} free blocks, all or none.
   *
   * @throws FerriteException NO_SPACE with the free counts per class, INVALID_ARGUMENT for an
   *     unknown class
   */
  List<BlockKey> plan(int count, String storageClass, boolean strict) {
    return plan(count, storageClass, strict, "");
  }

  /**
   * Like {@link #plan(int, String, boolean)}, with a location hint: within each class, servers the
   * hint names ({@link #near}) give their free blocks first, round-robin among themselves; the
   * others only when those are full. Class preference comes first: a hinted server's disk never
   * goes before another server's dram.
   */
  List<BlockKey> plan(int count, String storageClass, boolean strict, String location) {
    List<String> order = order(storageClass, strict);
    int bang = location.indexOf('!');
    java.util.Set<Integer> excluded = bang < 0 ? java.util.Set.of() : excluded(location, bang);
    String hint = bang < 0 ? location : location.substring(0, bang);
    int available = 0;
    for (String cls : order) {
      available += free(cls);
    }
    if (available < count) {
      throw new FerriteException(
          ErrorCode.NO_SPACE, noSpaceMessage(count, storageClass, strict, order));
    }
    List<BlockKey> picks = new ArrayList<>(count);
    for (String cls : order) {
      if (picks.size() < count && !hint.isEmpty()) {
        pickRoundRobin(
            cls, count - picks.size(), picks, s -> !excluded.contains(s.id) && near(s, hint));
      }
      if (picks.size() < count) {
        pickRoundRobin(
            cls,
            count - picks.size(),
            picks,
            s -> !excluded.contains(s.id) && (hint.isEmpty() || !near(s, hint)));
      }
    }
    if (picks.size() < count) {
      // Only an exclusion leaves free blocks unpicked: what the excluded servers hold.
      throw new FerriteException(
          ErrorCode.NO_SPACE,
          noSpaceMessage(count, storageClass, strict, order)
              + "; servers "
              + excluded
              + " excluded (they hold the other copies)");
    }
    return picks;
  }

  /**
   * The server ids after the {@code !} of a location: {@code "!1,3"} (or {@code "s2!1,3"}, with a
   * hint) never picks servers 1 and 3 — a replicated block's copies each on another server.
   */
  private static java.util.Set<Integer> excluded(String location, int bang) {
    java.util.Set<Integer> out = new java.util.HashSet<>();
    for (String id : location.substring(bang + 1).split(",")) {
      if (!id.isEmpty()) {
        try {
          out.add(Integer.parseInt(id));
        } catch (NumberFormatException e) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "location: " + location + " (expected: server ids after '!', e.g. !1,3)");
        }
      }
    }
    return out;
  }

  /**
   * Whether {@code location} names server {@code s}: its name, its host identity ({@code
   * hostname/boot-id/net:inode}), a prefix of it ending at a {@code /} ({@code hostname/boot-id}),
   * or its host name alone.
   */
  static boolean near(ServerEntry s, String location) {
    return location.equals(s.name)
        || location.equals(s.hostId)
        || (s.hostId != null && s.hostId.startsWith(location + "/"));
  }

  private List<String> order(String storageClass, boolean strict) {
    if (storageClass.isEmpty()) {
      return List.copyOf(classOrder);
    }
    if (!classOrder.contains(storageClass)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "storage class '" + storageClass + "' (expected: one of " + classOrder + ")");
    }
    List<String> order = new ArrayList<>();
    order.add(storageClass);
    if (!strict) {
      for (String c : classOrder) {
        if (!c.equals(storageClass)) {
          order.add(c);
        }
      }
    }
    return order;
  }

  /** Free blocks of {@code cls} on ALIVE servers. */
  int free(String cls) {
    int n = 0;
    for (ServerEntry s : servers.values()) {
      if (s.state == ServerState.ALIVE) {
        for (RegionEntry r : s.regions.values()) {
          if (r.info.storageClass().equals(cls)) {
            n += r.free();
          }
        }
      }
    }
    return n;
  }

  private int total(String cls) {
    int n = 0;
    for (ServerEntry s : servers.values()) {
      if (s.state == ServerState.ALIVE) {
        for (RegionEntry r : s.regions.values()) {
          if (r.info.storageClass().equals(cls)) {
            n += r.blocks;
          }
        }
      }
    }
    return n;
  }

  private String noSpaceMessage(
      int count, String storageClass, boolean strict, List<String> order) {
    StringBuilder sb = new StringBuilder();
    sb.append("cannot allocate ")
        .append(count)
        .append(" block(s) of ")
        .append(Sizes.format(blockSize))
        .append(" from ")
        .append(storageClass.isEmpty() ? "any class" : "class " + storageClass)
        .append(strict ? " (strict)" : "")
        .append(":");
    for (String cls : order) {
      sb.append(' ')
          .append(cls)
          .append(": ")
          .append(free(cls))
          .append(" of ")
          .append(total(cls))
          .append(" free;");
    }
    int live = 0;
    int down = 0;
    for (ServerEntry s : servers.values()) {
      if (s.state == ServerState.ALIVE) {
        live++;
      } else {
        down++;
      }
    }
    sb.append(' ').append(live).append(" live server(s)");
    if (down > 0) {
      sb.append(", ").append(down).append(" DEAD or UNKNOWN (their blocks are not handed out)");
    }
    return sb.toString();
  }

  private void pickRoundRobin(
      String cls, int want, List<BlockKey> picks, Predicate<ServerEntry> which) {
    // Per server, an iterator over its free blocks of this class, in region and index order.
    List<Iterator<BlockKey>> its = new ArrayList<>();
    List<Integer> ids = new ArrayList<>();
    for (ServerEntry s : servers.values()) {
      if (s.state != ServerState.ALIVE || !which.test(s)) {
        continue;
      }
      List<RegionEntry> rs = new ArrayList<>();
      for (RegionEntry r : s.regions.values()) {
        if (r.info.storageClass().equals(cls) && r.free() > 0) {
          rs.add(r);
        }
      }
      if (!rs.isEmpty()) {
        its.add(freeBlocks(s.id, rs));
        ids.add(s.id);
      }
    }
    if (its.isEmpty()) {
      return;
    }
    // Start after the server that got the last block of this class.
    int last = lastServed.getOrDefault(cls, 0);
    int start = 0;
    while (start < ids.size() && ids.get(start) <= last) {
      start++;
    }
    int n = its.size();
    int i = start % n;
    int exhausted = 0;
    boolean[] done = new boolean[n];
    while (want > 0 && exhausted < n) {
      if (!done[i]) {
        if (its.get(i).hasNext()) {
          picks.add(its.get(i).next());
          lastServed.put(cls, ids.get(i));
          want--;
        } else {
          done[i] = true;
          exhausted++;
        }
      }
      i = (i + 1) % n;
    }
  }

  private static Iterator<BlockKey> freeBlocks(int serverId, List<RegionEntry> regions) {
    return new Iterator<>() {
      int r = 0;
      int next = -1;

      {
        advance();
      }

      private void advance() {
        while (r < regions.size()) {
          RegionEntry reg = regions.get(r);
          int idx = reg.nextAllocatable(next + 1);
          if (idx < reg.blocks) {
            next = idx;
            return;
          }
          r++;
          next = -1;
        }
      }

      @Override
      public boolean hasNext() {
        return r < regions.size();
      }

      @Override
      public BlockKey next() {
        BlockKey k = new BlockKey(serverId, regions.get(r).info.ref().regionId(), next);
        advance();
        return k;
      }
    };
  }
}
