package io.ferrite.kernel.server;

import io.ferrite.kernel.proto.RegionInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Which master group hands out the blocks of each of a memory server's regions, in a cluster of
 * several groups (docs/RESILIENCE.md, "Master groups"). A server's capacity is split between the
 * groups by region: a block-pool region is given to group {@code regionId mod groups} when it is
 * first seen, and keeps that group for its life, recorded in {@code <data.dir>/<name>/groups}, so
 * adding a group to the URI later moves no region that holds blocks (a group that lost a region it
 * had would declare its blocks lost). A region made anew at a start (a clean stop or a reboot
 * deletes the DRAM region files: the old group declares the old one lost whatever happens) is new
 * memory and is given by its id again, so a group added to the URI gets its share of the DRAM of
 * the servers restarted with it. A service region (a kv shard's) belongs to the group its service
 * names when it makes it ({@link #assignService}: the group that holds the shard's table); it dies
 * with the process, so it is not recorded in the file.
 *
 * <p>Cost: a pool region is one group's, so a server with fewer pool regions than groups leaves a
 * group without blocks on it; give each server at least {@code groups x region.size} per class.
 *
 * <p>Thread-safe (synchronized): consulted at each registration and at each pool change.
 */
final class RegionGroups {
  private static final System.Logger LOG = System.getLogger(RegionGroups.class.getName());

  private final Path file;
  private final int groups;
  private final Map<Integer, Integer> byRegion = new TreeMap<>();

  /** Service region id -> group, while the region lives (in memory: it dies with the process). */
  private final Map<Integer, Integer> services = new java.util.HashMap<>();

  RegionGroups(Path serverDir, int groups) {
    this.file = serverDir.resolve("groups");
    this.groups = groups;
    if (groups > 1 && Files.exists(file)) {
      try {
        for (String line : Files.readAllLines(file, StandardCharsets.US_ASCII)) {
          String[] kv = line.strip().split("=", 2);
          if (kv.length == 2) {
            byRegion.put(Integer.parseInt(kv[0]), Integer.parseInt(kv[1]));
          }
        }
      } catch (IOException | NumberFormatException e) {
        LOG.log(System.Logger.Level.WARNING, "ignoring unreadable " + file, e);
        byRegion.clear();
      }
    }
  }

  /**
   * At start, once the surviving region files are re-opened: forgets the groups of regions that are
   * not among {@code survived} (their memory is gone; the same ids made anew are new memory).
   */
  synchronized void keepOnly(Collection<RegionInfo> survived) {
    Set<Integer> ids = new HashSet<>();
    for (RegionInfo r : survived) {
      ids.add(r.ref().regionId());
    }
    byRegion.keySet().retainAll(ids);
  }

  int count() {
    return groups;
  }

  /** The group of {@code r}: kept if known, else given (and recorded by {@link #sync}). */
  synchronized int groupOf(RegionInfo r) {
    if (groups == 1) {
      return 0;
    }
    int id = r.ref().regionId();
    if (!r.isBlockPool()) {
      return services.getOrDefault(id, 0);
    }
    Integer g = byRegion.get(id);
    if (g == null || g >= groups) {
      if (g != null) {
        LOG.log(
            System.Logger.Level.WARNING,
            "region {0} was master group {1}''s, but the URI names {2} group(s) now",
            id,
            g,
            groups);
      }
      g = Math.floorMod(id, groups);
      byRegion.put(id, g);
    }
    return g;
  }

  /**
   * Service region {@code regionId} belongs to {@code group} (0 <= group < {@link #count}) until
   * {@link #forgetService}.
   */
  synchronized void assignService(int regionId, int group) {
    if (group < 0 || group >= groups) {
      throw new IllegalArgumentException(
          "master group " + group + " (expected: >= 0 and < " + groups + ")");
    }
    if (groups > 1) {
      services.put(regionId, group);
    }
  }

  /** Service region {@code regionId} was freed. */
  synchronized void forgetService(int regionId) {
    services.remove(regionId);
  }

  /** Of {@code all}, the regions of {@code group}. */
  synchronized List<RegionInfo> of(int group, Collection<RegionInfo> all) {
    List<RegionInfo> out = new ArrayList<>();
    for (RegionInfo r : all) {
      if (groupOf(r) == group) {
        out.add(r);
      }
    }
    return out;
  }

  /**
   * Forgets regions no longer in {@code all}, gives a group to new ones, and writes the file if
   * anything changed (a temporary file renamed over it: a crash leaves the old or the new one).
   */
  synchronized void sync(Collection<RegionInfo> all) {
    if (groups == 1) {
      return;
    }
    Map<Integer, Integer> before = new TreeMap<>(byRegion);
    Set<Integer> live = new HashSet<>();
    for (RegionInfo r : all) {
      if (r.isBlockPool()) {
        live.add(r.ref().regionId());
        groupOf(r);
      }
    }
    byRegion.keySet().retainAll(live);
    if (byRegion.equals(before) && Files.exists(file)) {
      return;
    }
    StringBuilder sb = new StringBuilder();
    byRegion.forEach((id, g) -> sb.append(id).append('=').append(g).append('\n'));
    try {
      Path tmp = file.resolveSibling("groups.tmp");
      Files.writeString(tmp, sb, StandardCharsets.US_ASCII);
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }
}
