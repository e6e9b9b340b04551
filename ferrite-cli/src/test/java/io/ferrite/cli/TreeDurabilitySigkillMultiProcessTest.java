package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The tree log under {@code tree.log.sync=always} (docs/TREE.md, Durability): a memory server (its
 * own JVM, small meganodes so that they split all along) takes concurrent puts and deletes from
 * four writers in this JVM and is SIGKILLed mid-stream; restarted on the same directory, it replays
 * its log before it serves: every acknowledged put is there with its value, every acknowledged
 * delete gone (a key's one write in flight at the kill may have landed or not), and scans by both
 * paths return the keys in order, each once. Writes and splits then go on.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class TreeDurabilitySigkillMultiProcessTest extends ProcessClusterTest {
  static final String[] TREE_SETS = {
    "tree.log.sync=always",
    "tree.meganode.size=32k",
    "tree.node.size=512",
    "tree.extent.region.size=64k",
    "tree.extent.regions=64"
  };

  private FerriteClient client() {
    return tcpClient("tree-dur-mp");
  }

  /** One writer's keys: what its acknowledged writes left (null: deleted), and its last write. */
  static final class Writer {
    final Map<String, String> acked = new HashMap<>();
    String inFlightKey;
    String inFlightValue; // null: a delete
  }

  @Test
  void everyAcknowledgedWriteSurvivesASigkilledServerWhileMeganodesSplit(Random random)
      throws Exception {
    newCluster("tree-dur-mp-test", "ferrite-tree-dur-mp-");
    startMaster("master", "server.dead.timeout=1s");
    Process server = startServer("s1", "256m", "0", TREE_SETS);
    await("an ALIVE server", () -> CliProcesses.oneServerAlive(port, credentials));
    Tree tree = new TreeClient(client()).create("durable");

    AtomicInteger acks = new AtomicInteger();
    ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<RuntimeException> deaths = new ConcurrentLinkedQueue<>();
    List<Writer> writers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < 4; w++) {
      Writer state = new Writer();
      writers.add(state);
      long seed = random.nextLong();
      int id = w;
      threads.add(
          new Thread(
              () -> {
                Random r = new Random(seed);
                for (int i = 0; ; i++) {
                  String k = String.format(Locale.ROOT, "w%d-%05d", id, r.nextInt(4000));
                  boolean delete = r.nextInt(4) == 0 && state.acked.get(k) != null;
                  String v = delete ? null : "v" + id + "-" + i;
                  state.inFlightKey = k;
                  state.inFlightValue = v;
                  try {
                    if (delete) {
                      tree.delete(b(k));
                    } else {
                      tree.put(b(k), b(v));
                    }
                  } catch (RuntimeException e) {
                    deaths.add(e); // the server died under this write: its outcome is unknown
                    return;
                  }
                  state.acked.put(k, v);
                  state.inFlightKey = null;
                  acks.incrementAndGet();
                }
              },
              "tree-mp-writer-" + w));
    }
    for (Thread t : threads) {
      t.setUncaughtExceptionHandler((th, e) -> unexpected.add(e));
      t.start();
    }
    await("4000 acknowledged writes", () -> acks.get() >= 4000);
    long[] before = tree.stats();
    server.destroyForcibly().waitFor(); // SIGKILL, mid-stream (splits included)
    for (Thread t : threads) {
      t.join(60_000);
      assertTrue(!t.isAlive(), t.getName() + " still writing to a dead server");
    }
    assertTrue(unexpected.isEmpty(), "writers failed: " + unexpected);
    assertEquals(4, deaths.size());
    for (RuntimeException e : deaths) {
      // A clear error: a FerriteException with its code, not a hang or a bare exception.
      assertInstanceOf(FerriteException.class, e, "the error of a write to the killed server");
    }
    assertTrue(before[0] >= 4, "meganodes before the kill: " + before[0]);

    startServer("s1", "256m", "0", TREE_SETS);
    await("the restarted server ALIVE", () -> CliProcesses.oneServerAlive(port, credentials));
    Tree again = await("the tree served again", () -> new TreeClient(client()).open("durable"));
    await("the tree readable", () -> again.stats());

    // The expected pairs; a key's write in flight at the kill may or may not have landed.
    Map<String, String> expected = new HashMap<>();
    Map<String, String> maybe = new HashMap<>();
    for (Writer w : writers) {
      w.acked.forEach(
          (k, v) -> {
            if (v != null) {
              expected.put(k, v);
            }
          });
      if (w.inFlightKey != null) {
        maybe.put(w.inFlightKey, w.inFlightValue == null ? "" : w.inFlightValue);
      }
    }
    int checked = 0;
    for (Writer w : writers) {
      for (Map.Entry<String, String> e : w.acked.entrySet()) {
        byte[] got = again.get(b(e.getKey()));
        String other = maybe.get(e.getKey());
        if (other != null && (got == null ? other.isEmpty() : other.equals(str(got)))) {
          continue; // the in-flight write landed
        }
        if (e.getValue() == null) {
          assertNull(got, "acknowledged delete of " + e.getKey() + " undone\n" + logs());
        } else {
          assertArrayEquals(
              b(e.getValue()), got, "acknowledged put of " + e.getKey() + "\n" + logs());
        }
        checked++;
      }
    }
    assertTrue(checked >= 1000, "checked " + checked);
    for (Tree.Path path : Tree.Path.values()) {
      List<Map.Entry<byte[], byte[]>> all = again.scan(null, null, Integer.MAX_VALUE, path);
      for (int i = 1; i < all.size(); i++) {
        assertTrue(
            Arrays.compareUnsigned(all.get(i - 1).getKey(), all.get(i).getKey()) < 0,
            path + " scan: keys in order, no repeats, at " + i);
      }
      Map<String, String> scanned = new HashMap<>();
      for (Map.Entry<byte[], byte[]> e : all) {
        scanned.put(str(e.getKey()), str(e.getValue()));
      }
      for (Map.Entry<String, String> e : expected.entrySet()) {
        if (!maybe.containsKey(e.getKey())) {
          assertEquals(e.getValue(), scanned.get(e.getKey()), path + " scan: " + e.getKey());
        }
      }
      for (Map.Entry<String, String> e : scanned.entrySet()) {
        if (!maybe.containsKey(e.getKey())) {
          assertEquals(
              expected.get(e.getKey()), e.getValue(), path + " scan: unexpected " + e.getKey());
        }
      }
    }
    // Writes (and meganode splits) go on after the replay.
    for (int i = 0; i < 1500; i++) {
      again.put(b(String.format(Locale.ROOT, "after-%05d", i)), b("a" + i));
    }
    assertEquals(1500, again.scan(b("after-"), b("after."), 5000).size());
  }

  private static String str(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
