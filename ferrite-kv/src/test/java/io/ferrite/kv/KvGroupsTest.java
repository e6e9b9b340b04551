package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.GroupsHarness;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * kv tables across master groups (issue #20, docs/RESILIENCE.md "Master groups"): a table lives in
 * the group its name is placed in, its shards' regions are that group's, one client reaches every
 * group's tables, one group's master down leaves the others' tables served, and a group added later
 * takes only new names.
 */
@ExtendWith(SeedExtension.class)
class KvGroupsTest {
  /** Durable, so a restarted server gets its shards back from its log (with their group). */
  static final TableOptions SMALL =
      KvCluster.smallTable(2).withDurability(TableOptions.Durability.ALWAYS);

  @TempDir Path dir;
  GroupsHarness cluster;

  @BeforeEach
  void start() throws Exception {
    Map<String, String> settings = new HashMap<>();
    // 32 pool regions of 256 KiB per server: each group gets its share, and service regions
    // (shards) retire empty pool regions of any group to make room.
    settings.put(FerriteConfig.CAPACITY_DRAM, "8m");
    settings.put(FerriteConfig.CAPACITY_DISK, "0");
    settings.put(FerriteConfig.SESSION_LEASE, "5s");
    cluster = new GroupsHarness(dir, KvCluster.CREDENTIALS, settings, 2);
    cluster.startMaster();
    cluster.startGroup(1);
    cluster.startServer("s1");
    cluster.startServer("s2");
    awaitServers();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private void awaitServers() throws InterruptedException {
    for (int g = 0; g < cluster.groups(); g++) {
      cluster.awaitServers(g, 2);
    }
  }

  /** The group a new table name goes to among {@code groups}, by the placement rule. */
  private static int ruled(String table, int groups) {
    return PlacementProtocol.choose(PlacementProtocol.key(PlacementProtocol.KV, table), groups);
  }

  /**
   * {@code count} names per group of {@code groups} that the rule places there (random, seeded), so
   * every group gets tables whatever the seed.
   */
  private static List<String> namesPerGroup(Random random, int groups, int count, String prefix) {
    List<String> out = new ArrayList<>();
    int[] have = new int[groups];
    while (out.size() < groups * count) {
      String name = prefix + Integer.toHexString(random.nextInt());
      int g = ruled(name, groups);
      if (have[g] < count) {
        have[g]++;
        out.add(name);
      }
    }
    return out;
  }

  /** The tables group {@code g} lists itself (asked of it alone). */
  private Set<String> tablesIn(int g) {
    Set<String> out = new TreeSet<>();
    for (TableInfo t : new KvClient(cluster.groupClient(g)).tables()) {
      out.add(t.name());
    }
    return out;
  }

  /**
   * Every region of every shard of each table in {@code groupOf} (table -> its group) is a kv
   * region of its table's group's master, and of no other group's.
   */
  private void assertShardRegionsInTheirGroups(KvClient kv, Map<String, Integer> groupOf) {
    for (Map.Entry<String, Integer> e : groupOf.entrySet()) {
      KvTable t = kv.table(e.getKey());
      for (int shard = 0; shard < t.info().servers().length; shard++) {
        ShardLayout l = t.layout(shard);
        List<io.ferrite.fabric.RegionRef> refs = new ArrayList<>(l.extents());
        refs.add(l.entries());
        for (io.ferrite.fabric.RegionRef ref : refs) {
          for (int g = 0; g < cluster.groups(); g++) {
            boolean held = false;
            for (RegionInfo r : cluster.masterOf(g).state().regions(ref.serverId())) {
              held |= r.ref().regionId() == ref.regionId() && "kv".equals(r.service());
            }
            assertEquals(
                g == e.getValue(),
                held,
                e.getKey() + " shard " + shard + " region " + ref + " in group " + g);
          }
        }
      }
    }
  }

  private static Map<String, Integer> ruledGroups(List<String> names, int groups) {
    Map<String, Integer> out = new LinkedHashMap<>();
    for (String n : names) {
      out.put(n, ruled(n, groups));
    }
    return out;
  }

  private static byte[] key(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] value(Random random) {
    byte[] b = new byte[1 + random.nextInt(48)];
    random.nextBytes(b);
    return b;
  }

  /** Creates {@code names} through {@code kv} and writes 8 keys to each; returns what it wrote. */
  private static Map<String, Map<String, byte[]>> fill(
      KvClient kv, List<String> names, Random random) {
    Map<String, Map<String, byte[]>> out = new LinkedHashMap<>();
    for (String name : names) {
      KvTable t = kv.createTable(name, SMALL);
      Map<String, byte[]> kvs = new LinkedHashMap<>();
      for (int i = 0; i < 8; i++) {
        byte[] v = value(random);
        assertTrue(t.put(key("k" + i), v));
        kvs.put("k" + i, v);
      }
      out.put(name, kvs);
    }
    return out;
  }

  private static void assertReadable(KvClient kv, Map<String, Map<String, byte[]>> written) {
    for (Map.Entry<String, Map<String, byte[]>> e : written.entrySet()) {
      KvTable t = kv.table(e.getKey());
      for (Map.Entry<String, byte[]> p : e.getValue().entrySet()) {
        assertArrayEquals(p.getValue(), t.get(key(p.getKey())), e.getKey() + "/" + p.getKey());
      }
    }
  }

  @Test
  void tablesLandInTheirGroupsAndAFreshClientReadsAndWritesThemAll(Random random) throws Exception {
    List<String> names = namesPerGroup(random, 2, 3, "t-");
    KvClient kv = new KvClient(cluster.client(2));
    Map<String, Map<String, byte[]>> written = fill(kv, names, random);

    // Each table is in the group the rule gave it, and only there.
    for (String name : names) {
      int g = ruled(name, 2);
      assertTrue(tablesIn(g).contains(name), name + " in group " + g);
      assertFalse(tablesIn(1 - g).contains(name), name + " not in group " + (1 - g));
    }
    // Their shards' regions are their group's: each group accounts for its own tables' regions.
    assertShardRegionsInTheirGroups(kv, ruledGroups(names, 2));

    // A fresh client of both groups reads everything and writes to every table.
    KvClient fresh = new KvClient(cluster.client(2));
    assertReadable(fresh, written);
    for (String name : names) {
      byte[] v = value(random);
      fresh.table(name).put(key("k0"), v);
      written.get(name).put("k0", v);
    }
    assertReadable(kv, written);

    // The listing merges every group's, in name order.
    List<String> listed = new ArrayList<>();
    for (TableInfo t : fresh.tables()) {
      listed.add(t.name());
    }
    assertEquals(new ArrayList<>(new TreeSet<>(names)), listed);

    // Dropping goes to the table's group.
    String dropped = names.get(names.size() - 1);
    new KvClient(cluster.adminClient(2)).dropTable(dropped);
    assertFalse(tablesIn(ruled(dropped, 2)).contains(dropped));
  }

  @Test
  void oneGroupsMasterDownLeavesTheOtherGroupsTablesServed(Random random) throws Exception {
    List<String> names = namesPerGroup(random, 2, 2, "d-");
    Map<String, Map<String, byte[]>> written = fill(new KvClient(cluster.client(2)), names, random);
    Map<String, Map<String, byte[]>> in0 = new LinkedHashMap<>();
    for (String name : names) {
      if (ruled(name, 2) == 0) {
        in0.put(name, written.get(name));
      }
    }

    cluster.stopGroup(1);
    // A fresh client (its URI names the stopped group) opens, reads and writes group 0's tables.
    KvClient fresh = new KvClient(cluster.client(2));
    assertReadable(fresh, in0);
    for (String name : in0.keySet()) {
      byte[] v = value(random);
      fresh.table(name).put(key("k1"), v);
      written.get(name).put("k1", v);
    }

    cluster.startGroup(1);
    cluster.awaitServers(1, 2);
    // Group 1's tables come back with its master (its journal, the shards on the servers).
    assertReadable(new KvClient(cluster.client(2)), written);
  }

  @Test
  void aReplicatedTableOfGroupOneFailsOverAndIsRepairedByItsGroup(Random random) throws Exception {
    cluster.startServer("s3");
    for (int g = 0; g < 2; g++) {
      cluster.awaitServers(g, 3);
    }
    String name =
        namesPerGroup(random, 2, 1, "r-").stream()
            .filter(n -> ruled(n, 2) == 1)
            .findFirst()
            .orElseThrow();
    KvClient kv = new KvClient(cluster.client(2));
    KvTable t =
        kv.createTable(name, SMALL.withDurability(TableOptions.Durability.NONE).withReplicas(2));
    Map<String, byte[]> pairs = new LinkedHashMap<>();
    for (int i = 0; i < 32; i++) {
      byte[] v = value(random);
      t.put(key("k" + i), v);
      pairs.put("k" + i, v);
    }
    int victim = t.info().servers()[0];
    MemoryServer dead =
        cluster.servers.stream().filter(s -> s.serverId() == victim).findFirst().orElseThrow();
    cluster.servers.remove(dead);
    dead.close();

    // The handle rides through group 1's failover: it asks its own group for the new primary
    // (group 0 does not know the table).
    for (Map.Entry<String, byte[]> p : pairs.entrySet()) {
      byte[] v = value(random);
      t.put(key(p.getKey()), v);
      p.setValue(v);
    }
    for (Map.Entry<String, byte[]> p : pairs.entrySet()) {
      assertArrayEquals(p.getValue(), t.get(key(p.getKey())), p.getKey());
    }
    // Group 1's repair gives every shard its second copy again, on the third server.
    ReplicationTest.awaitCopies(kv, name, 2);
    TableInfo after = kv.table(name).info();
    for (int i = 0; i < after.options().shards(); i++) {
      assertTrue(after.servers()[i] != victim, "shard " + i + " left the dead server");
    }
    assertTrue(
        ((Number) cluster.masterOf(1).faces().get("kv").get("copies repaired")).longValue() > 0,
        "group 1 repaired its table");
    assertEquals(
        0L,
        ((Number) cluster.masterOf(0).faces().get("kv").get("copies repaired")).longValue(),
        "group 0 has nothing to repair");
    KvTable fresh = new KvClient(cluster.client(2)).table(name);
    for (Map.Entry<String, byte[]> p : pairs.entrySet()) {
      assertArrayEquals(p.getValue(), fresh.get(key(p.getKey())), p.getKey());
    }
  }

  @Test
  void addingAGroupKeepsEveryTableReachableAndPlacesOnlyNewNamesInIt(Random random)
      throws Exception {
    // A table made through group 0 alone (a client of the cluster before it had groups), with a
    // name the rule would give group 1: it stays in group 0.
    String legacy =
        namesPerGroup(random, 2, 1, "legacy-").stream()
            .filter(n -> ruled(n, 2) == 1)
            .findFirst()
            .orElseThrow();
    Map<String, Map<String, byte[]>> written =
        fill(new KvClient(cluster.groupClient(0)), List.of(legacy), random);

    KvClient two = new KvClient(cluster.client(2));
    List<String> old = namesPerGroup(random, 2, 2, "old-");
    written.putAll(fill(two, old, random));
    assertReadable(two, written);
    // Creating the legacy table again finds it in group 0 (its group 0's directory holds it).
    two.createTable(legacy, SMALL);
    assertTrue(tablesIn(0).contains(legacy));
    assertFalse(tablesIn(1).contains(legacy));

    // Add group 2: start its master, restart the servers with the longer URI (their links are
    // made at start; the durable shards come back from their logs, into their groups' regions).
    cluster.startGroup(2);
    List<String> names = List.of("s1", "s2");
    for (MemoryServer s : List.copyOf(cluster.servers)) {
      s.close();
      cluster.servers.remove(s);
    }
    for (String n : names) {
      cluster.startServer(n);
    }
    awaitServers();
    // Replayed from the logs, the shards are in their tables' groups' regions again.
    Map<String, Integer> groupOf = ruledGroups(old, 2);
    groupOf.put(legacy, 0);
    assertShardRegionsInTheirGroups(new KvClient(cluster.client(3)), groupOf);

    KvClient three = new KvClient(cluster.client(3));
    assertReadable(three, written);
    for (String name : old) {
      assertTrue(tablesIn(ruled(name, 2)).contains(name), name + " stayed where it was");
    }
    assertTrue(tablesIn(0).contains(legacy));
    assertTrue(tablesIn(2).isEmpty(), "group 2 took an old name: " + tablesIn(2));

    // New names go to all three groups by the rule, group 2 included, and work there.
    List<String> fresh = namesPerGroup(random, 3, 1, "new-");
    Map<String, Map<String, byte[]>> added = fill(three, fresh, random);
    for (String name : fresh) {
      assertTrue(tablesIn(ruled(name, 3)).contains(name), name + " in group " + ruled(name, 3));
    }
    assertShardRegionsInTheirGroups(three, ruledGroups(fresh, 3));
    assertReadable(new KvClient(cluster.client(3)), added);
    assertReadable(new KvClient(cluster.client(3)), written);
  }
}
