package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.testing.GroupsHarness;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Trees across master groups (issue #14 with #20's groups, docs/RESILIENCE.md "Master groups"): a
 * tree's directory entry lives in the group its name ({@code tree:<name>}) is placed in, one client
 * reaches every group's trees, the listing merges every group's, a group that does not hold a name
 * refuses it, a group's master restarted keeps its trees, and a tree made before the cluster had
 * groups stays in group 0.
 */
@ExtendWith(SeedExtension.class)
class TreeGroupsTest {
  @TempDir Path dir;
  GroupsHarness cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new GroupsHarness(dir, TreeCluster.CREDENTIALS, TreeCluster.config(), 2);
    cluster.startMaster();
    cluster.startGroup(1);
    cluster.startServer("t1");
    cluster.startServer("t2");
    for (int g = 0; g < cluster.groups(); g++) {
      cluster.awaitServers(g, 2);
    }
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  /** The group a new tree name goes to among {@code groups}, by the placement rule. */
  private static int ruled(String name, int groups) {
    return GroupsHarness.ruled(PlacementProtocol.TREE, name, groups);
  }

  /** {@code count} tree names per group that the rule places there (random, seeded). */
  private static List<String> namesPerGroup(Random random, int groups, int count, String prefix) {
    return GroupsHarness.namesPerGroup(random, PlacementProtocol.TREE, groups, count, prefix);
  }

  /** The trees group {@code g}'s directory lists itself (asked of it alone), by name. */
  private Map<String, TreeClient.TreeInfo> treesIn(int g) {
    Map<String, TreeClient.TreeInfo> out = new TreeMap<>();
    for (TreeClient.TreeInfo t : new TreeClient(cluster.groupClient(g)).list()) {
      out.put(t.name(), t);
    }
    return out;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Creates {@code names} and puts {@code keys} keys in each; returns what it wrote. */
  private static Map<String, Map<String, byte[]>> fill(
      TreeClient trees, List<String> names, int keys, Random random) {
    Map<String, Map<String, byte[]>> out = new LinkedHashMap<>();
    for (String name : names) {
      Tree t = trees.create(name);
      Map<String, byte[]> kvs = new LinkedHashMap<>();
      for (int i = 0; i < keys; i++) {
        byte[] v = new byte[1 + random.nextInt(24)];
        random.nextBytes(v);
        assertTrue(t.put(bytes("k" + i), v), name + "/k" + i);
        kvs.put("k" + i, v);
      }
      out.put(name, kvs);
    }
    return out;
  }

  /** Every key written reads back through {@code trees}, by every search path. */
  private static void assertReadable(TreeClient trees, Map<String, Map<String, byte[]>> written) {
    for (Map.Entry<String, Map<String, byte[]>> e : written.entrySet()) {
      Tree t = trees.open(e.getKey());
      for (Map.Entry<String, byte[]> p : e.getValue().entrySet()) {
        for (Tree.Path path : Tree.Path.values()) {
          assertArrayEquals(
              p.getValue(), t.get(bytes(p.getKey()), path), e.getKey() + "/" + p.getKey() + path);
        }
      }
    }
  }

  @Test
  void treesLandInTheirGroupsAndEveryOperationWorksFromOneClient(Random random) throws Exception {
    List<String> names = namesPerGroup(random, 2, 3, "t-");
    TreeClient trees = new TreeClient(cluster.client(2));
    Map<String, Long> firstRoot = new LinkedHashMap<>();
    for (String name : names) {
      firstRoot.put(name, trees.create(name).rootPointer());
    }
    // Enough keys per tree that its root meganode splits (small meganodes: a few hundred keys).
    Map<String, Map<String, byte[]>> written = fill(trees, names, 600, random);

    for (String name : names) {
      int g = ruled(name, 2);
      assertTrue(treesIn(g).containsKey(name), name + " in group " + g);
      assertFalse(treesIn(1 - g).containsKey(name), name + " not in group " + (1 - g));
      // The tree's server told its root split to the directory of the tree's group.
      assertTrue(trees.open(name).stats()[1] >= 2, name + " has more than one level");
      long hint = treesIn(g).get(name).root();
      assertNotEquals(0L, hint, name + "'s root in group " + g);
      assertNotEquals((long) firstRoot.get(name), hint, name + "'s root after its split");
    }

    // A fresh client of both groups reads everything, and writes and deletes in every tree.
    TreeClient fresh = new TreeClient(cluster.client(2));
    assertReadable(fresh, written);
    for (String name : names) {
      Tree t = fresh.open(name);
      byte[] v = bytes("again-" + name);
      assertFalse(t.put(bytes("k0"), v));
      written.get(name).put("k0", v);
      assertTrue(t.delete(bytes("k1")));
      written.get(name).remove("k1");
      assertEquals(10, t.scan(bytes("k2"), null, 10).size(), name + " scan");
    }
    assertReadable(trees, written);

    // The listing merges every group's, in name order.
    List<String> listed = new ArrayList<>();
    for (TreeClient.TreeInfo t : fresh.list()) {
      listed.add(t.name());
    }
    assertEquals(new ArrayList<>(new TreeSet<>(names)), listed);

    // A group that does not hold a name refuses it (a client of that group alone).
    for (String name : names) {
      TreeClient other = new TreeClient(cluster.groupClient(1 - ruled(name, 2)));
      FerriteException e = assertThrows(FerriteException.class, () -> other.open(name));
      assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
      assertFalse(other.drop(name), name + " dropped by a group that does not hold it");
    }
    assertEquals(names.size(), fresh.list().size());

    // Dropping goes to the tree's group: one tree of each group.
    for (int g = 0; g < 2; g++) {
      int group = g;
      String dropped = names.stream().filter(n -> ruled(n, 2) == group).findFirst().orElseThrow();
      assertTrue(fresh.drop(dropped), dropped);
      assertFalse(treesIn(g).containsKey(dropped), dropped + " left group " + g);
      FerriteException e = assertThrows(FerriteException.class, () -> trees.open(dropped));
      assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
      written.remove(dropped);
    }
    assertEquals(names.size() - 2, fresh.list().size());
    assertReadable(new TreeClient(cluster.client(2)), written);
  }

  @Test
  void aGroupsMasterRestartedKeepsItsTreesAndTheOtherGroupsTreesStayServed(Random random)
      throws Exception {
    List<String> names = namesPerGroup(random, 2, 2, "r-");
    Map<String, Map<String, byte[]>> written =
        fill(new TreeClient(cluster.client(2)), names, 100, random);
    Map<String, Map<String, byte[]>> in0 = new LinkedHashMap<>();
    for (String name : names) {
      if (ruled(name, 2) == 0) {
        in0.put(name, written.get(name));
      }
    }

    cluster.stopGroup(1);
    // A fresh client (its URI names the stopped group) opens, reads and writes group 0's trees,
    // enough that their roots split while group 1's master is away (told to group 0 only).
    TreeClient fresh = new TreeClient(cluster.client(2));
    assertReadable(fresh, in0);
    for (String name : in0.keySet()) {
      Tree t = fresh.open(name);
      for (int i = 100; i < 600; i++) {
        byte[] v = bytes("v" + i);
        t.put(bytes("k" + i), v);
        written.get(name).put("k" + i, v);
      }
    }
    FerriteException e = assertThrows(FerriteException.class, fresh::list);
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());

    cluster.startGroup(1);
    cluster.awaitServers(1, 2);
    // Group 1's trees come back with its master (its journal; the meganodes on the servers).
    TreeClient after = new TreeClient(cluster.client(2));
    assertReadable(after, written);
    List<String> listed = new ArrayList<>();
    for (TreeClient.TreeInfo t : after.list()) {
      listed.add(t.name());
    }
    assertEquals(new ArrayList<>(new TreeSet<>(names)), listed);
    for (String name : names) {
      assertTrue(treesIn(ruled(name, 2)).containsKey(name), name + " in its group after restart");
    }
  }

  @Test
  void aTreeMadeBeforeTheClusterHadGroupsStaysInGroupZero(Random random) throws Exception {
    // Made through group 0 alone (a client of the cluster before it had groups), with a name the
    // rule would give group 1.
    String legacy =
        namesPerGroup(random, 2, 1, "legacy-").stream()
            .filter(n -> ruled(n, 2) == 1)
            .findFirst()
            .orElseThrow();
    Map<String, Map<String, byte[]>> written =
        fill(new TreeClient(cluster.groupClient(0)), List.of(legacy), 50, random);
    TreeClient two = new TreeClient(cluster.client(2));
    assertReadable(two, written);
    // Creating it again through both groups finds it in group 0 (its directory holds the name).
    long id = treesIn(0).get(legacy).id();
    two.create(legacy);
    List<TreeClient.TreeInfo> all = two.list();
    assertEquals(1, all.size(), all.toString());
    assertEquals(id, all.get(0).id());
    assertTrue(treesIn(0).containsKey(legacy));
    assertFalse(treesIn(1).containsKey(legacy));
    assertReadable(new TreeClient(cluster.client(2)), written);
  }
}
