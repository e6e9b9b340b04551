package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import io.ferrite.tree.TreeConfig;
import io.ferrite.tree.TreeModel;
import io.ferrite.tree.TreeProtocol;
import io.ferrite.tree.TreeShape;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Meganode splits whose new meganode is on another server (docs/TREE.md "Meganodes on several
 * servers"), two servers over the local fabric, {@code spread} placement, {@code always}: a split
 * "crashed" (the source's log closed, {@link TreeService#testSplitStep}) after its start, after the
 * copy and after its end, the source restarted: no meganode left over on either server, every
 * acknowledged put there; a target server stopped during a split: the split gives up, the tree on
 * the source whole, the stopped server's keys a clear error; server-only opcodes refused to a
 * client.
 */
@ExtendWith(SeedExtension.class)
class RemoteSplitTest {
  static final Credentials CREDENTIALS =
      new Credentials(
          "tree-remote-test",
          "0123456789abcdef-tree-remote-secret".getBytes(StandardCharsets.UTF_8));

  @TempDir Path dir;
  ClusterHarness cluster;

  /** The tree service of each server by server id, the newest start. */
  final Map<Integer, TreeService> services = new ConcurrentHashMap<>();

  @AfterEach
  void stop() throws Exception {
    TreeService.testStarted = null;
    TreeService.testSplitStep = null;
    if (cluster != null) {
      cluster.close();
    }
  }

  private void start(String sync) throws Exception {
    Map<String, String> c = new HashMap<>(DurableTreeFixture.smallMeganodes(sync));
    c.put(TreeConfig.PLACEMENT, "spread");
    TreeService.testStarted = s -> services.put(s.serverId(), s);
    cluster = new ClusterHarness(dir, CREDENTIALS, false, c);
    cluster.startMaster();
    cluster.startServer("tree0");
    cluster.startServer("tree1");
    cluster.awaitServers(2);
  }

  private MemoryServer server(int id) {
    for (MemoryServer s : cluster.servers) {
      if (s.serverId() == id) {
        return s;
      }
    }
    throw new AssertionError("no server " + id);
  }

  /** Closes server {@code id} (its DRAM regions go) and starts it again on its directory. */
  private TreeService restart(int id) {
    MemoryServer old = server(id);
    cluster.servers.remove(old);
    services.remove(id);
    old.close();
    cluster.startServer(old.name());
    TreeService s = services.get(id);
    assertTrue(s != null, "server " + id + " back under its id");
    return s;
  }

  static byte[] key(int k) {
    byte[] b = new byte[4 + k % 7];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (k * 31 + i * 0x53);
    }
    b[0] = (byte) (k >>> 8);
    b[1] = (byte) k;
    return b;
  }

  /** Waits (bounded, polling: no timing asserted) until {@code done} holds. */
  private static void await(BooleanSupplier done, String what) throws InterruptedException {
    for (int i = 0; i < 3000 && !done.getAsBoolean(); i++) {
      Thread.sleep(10);
    }
    assertTrue(done.getAsBoolean(), what);
  }

  /**
   * A writer puts keys in a scattered order until the first split to the other server crashes its
   * source at {@code step} (the source's log ends there, as a SIGKILL's would). The source
   * restarts: the split is undone before its end (the target's pending copy dropped at the source's
   * word: no meganode of the tree is left on the target) or completed after it (the target's
   * meganode confirmed and reached by the source's link); every acknowledged put is there by both
   * paths; writes and splits go on; a second restart of both keeps it all.
   */
  @ParameterizedTest
  @ValueSource(strings = {"remote-begun", "remote-copied", "remote-ended"})
  void aRemoteSplitCrashedAtEachStepLeavesNoOrphanAndLosesNoAcknowledgedPut(
      String step, Random random) throws Exception {
    start("always");
    AtomicBoolean crashed = new AtomicBoolean();
    AtomicReference<Thread> crashedOn = new AtomicReference<>();
    TreeService.testSplitStep =
        s -> {
          if (s.equals(step) && crashed.compareAndSet(false, true)) {
            crashedOn.set(Thread.currentThread());
            throw new TreeService.Crash(s);
          }
        };
    TreeClient client = new TreeClient(cluster.client());
    Tree tree = client.create("t");
    int home = client.list().get(0).server();
    int target = services.keySet().stream().filter(id -> id != home).findFirst().orElseThrow();
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 5000; i++) {
      order.add(i);
    }
    Collections.shuffle(order, random);
    TreeMap<byte[], byte[]> acked = TreeModel.model();
    byte[] inFlight = null;
    Throwable failure = null;
    for (int i : order) {
      try {
        tree.put(key(i), key(i + 1));
        acked.put(key(i), key(i + 1));
      } catch (RuntimeException e) {
        failure = e;
        inFlight = key(i);
        break;
      }
    }
    assertTrue(crashed.get(), "no remote split reached " + step);
    assertEquals(
        "tree-splitter-" + home, crashedOn.get().getName(), "the first remote split is home's");
    FerriteException e = assertInstanceOf(FerriteException.class, failure);
    assertTrue(
        e.code() == ErrorCode.UNAVAILABLE || e.code() == ErrorCode.BUSY,
        "a clear error for a write to the crashed server: " + e);
    TreeService.testSplitStep = null;

    TreeService source = restart(home);
    boolean completed = step.equals("remote-ended");
    assertEquals(completed ? 0 : 1, source.lastReplay().unfinished.size(), "unfinished splits");
    TreeService other = services.get(target);
    await(
        () -> source.remote().owedDrops.isEmpty() && source.remote().owedConfirms.isEmpty(),
        "the source's owed DROP or CONFIRM answered by the target");
    await(
        () -> other.remote().adoptions.values().stream().noneMatch(a -> a.pending),
        "no pending meganode left on the target");
    int[] perServer = TreeShape.meganodesPerServer(cluster, client, "t");
    int onTarget = perServer[cluster.servers.indexOf(server(target))];
    assertEquals(completed ? 1 : 0, onTarget, "the target's meganodes of the tree");

    Tree again = new TreeClient(cluster.client()).open("t");
    if (inFlight != null) {
      acked.remove(inFlight); // not acknowledged: either way; make it absent
      again.delete(inFlight);
    }
    TreeModel.assertHolds(again, acked, "after the crashed split");
    for (int k = 5000; k < 8000; k++) {
      again.put(key(k), key(k + 1));
      acked.put(key(k), key(k + 1));
    }
    assertTrue(
        TreeShape.serversWithMeganodes(cluster, client, "t") == 2,
        "splits to the other server go on");
    assertWholeStats(again, client, "after the recovery");
    TreeModel.assertHolds(again, acked, "writes after the recovery");
    restart(target);
    restart(home);
    TreeModel.assertHolds(
        new TreeClient(cluster.client()).open("t"), acked, "both servers restarted");
  }

  /**
   * The target restarts (its DRAM gone, its log replayed) in the middle of the first split to it,
   * after the copy or after the source's R_END: its replayed meganode is pending and asks the
   * source (RESOLVE: the split still runs, WAIT), then the source's CONFIRM (or a KEEP) settles it.
   * No pending meganode is left, the target keeps the split's meganode, every put is there.
   */
  @ParameterizedTest
  @ValueSource(strings = {"remote-copied", "remote-ended"})
  void aTargetRestartedDuringASplitKeepsItsMeganodeOnceTheSourceEnds(String step, Random random)
      throws Exception {
    start("always");
    TreeClient client = new TreeClient(cluster.client());
    Tree tree = client.create("t");
    int home = client.list().get(0).server();
    int target = services.keySet().stream().filter(id -> id != home).findFirst().orElseThrow();
    AtomicBoolean restarted = new AtomicBoolean();
    TreeService.testSplitStep =
        s -> {
          if (s.equals(step)
              && Thread.currentThread().getName().equals("tree-splitter-" + home)
              && restarted.compareAndSet(false, true)) {
            TreeService t = restart(target);
            assertTrue(
                t.remote().adoptions.values().stream().anyMatch(a -> a.pending),
                "the replayed copy is pending");
          }
        };
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 4000; i++) {
      order.add(i);
    }
    Collections.shuffle(order, random);
    TreeMap<byte[], byte[]> acked = TreeModel.model();
    for (int i : order) {
      tree.put(key(i), key(i + 1));
      acked.put(key(i), key(i + 1));
    }
    assertTrue(restarted.get(), "no split to the other server reached " + step);
    TreeService.testSplitStep = null;
    TreeService source = services.get(home);
    await(
        () ->
            source.remote().owedConfirms.isEmpty()
                && services.get(target).remote().adoptions.values().stream()
                    .noneMatch(a -> a.pending),
        "the target's meganodes confirmed");
    assertTrue(
        TreeShape.meganodesPerServer(cluster, client, "t")[cluster.servers.indexOf(server(target))]
            >= 1,
        "the target keeps its meganodes");
    TreeModel.assertHolds(
        new TreeClient(cluster.client()).open("t"), acked, "after the target's restart");
    restart(target);
    restart(home);
    TreeModel.assertHolds(
        new TreeClient(cluster.client()).open("t"), acked, "both servers restarted");
  }

  /**
   * A leaf meganode that only a meganode on the other server links to: a leaf on the guest server
   * splits there, then splits again into the home server, whose new meganode takes its link to the
   * first split's right half; on the guest nothing points at that half any more (its parent is on
   * home). Descending writes make the guest's leaves split again and again, so this happens. The
   * replay keeps it (from R_END's old link), also after a compaction (from LINKED): both servers
   * restarted, as the logs are and then compacted, every acknowledged pair is there. (Before the
   * fix the replay dropped it as unreachable, a NOT_FOUND for every key it held.)
   */
  @Test
  void aMeganodeOnlyTheOtherServerLinksToSurvivesRestartsAndCompaction(Random random)
      throws Exception {
    start("interval");
    TreeClient client = new TreeClient(cluster.client());
    Tree tree = client.create("t");
    int home = client.list().get(0).server();
    int guest = services.keySet().stream().filter(id -> id != home).findFirst().orElseThrow();
    TreeMap<byte[], byte[]> acked = TreeModel.model();
    List<Integer> first = new ArrayList<>();
    for (int k = 0; k < 24000; k += 4) {
      first.add(k);
    }
    Collections.shuffle(first, random);
    for (int k : first.subList(0, 1500)) {
      tree.put(key(k), key(k + 1));
      acked.put(key(k), key(k + 1));
    }
    for (int k = 23999; k >= 0; k -= 2) {
      tree.put(key(k), key(k + 7));
      acked.put(key(k), key(k + 7));
    }
    await(
        () ->
            services.values().stream()
                .allMatch(
                    s ->
                        s.remote().owedConfirms.isEmpty()
                            && s.remote().adoptions.values().stream().noneMatch(a -> a.pending)),
        "every remote split confirmed");
    assertTrue(
        !services.get(guest).linkedFromAfar().isEmpty(),
        "no meganode on the guest server is linked from home only: the test missed its case");
    restart(guest);
    restart(home);
    TreeModel.assertHolds(
        new TreeClient(cluster.client()).open("t"), acked, "both servers restarted");
    assertTrue(!services.get(guest).linkedFromAfar().isEmpty(), "the mark survives the replay");
    services.values().forEach(TreeService::compactLog);
    restart(guest);
    restart(home);
    assertTrue(!services.get(guest).linkedFromAfar().isEmpty(), "... and a compaction");
    TreeModel.assertHolds(
        new TreeClient(cluster.client()).open("t"), acked, "both restarted after a compaction");
  }

  /**
   * The other server is stopped at the start of home's second split to it (the first completed: it
   * holds a leaf meganode): the split gives up (owing the stopped server a DROP of whatever it
   * made) and its source keeps every pair; a key in the stopped server's meganode fails with
   * UNAVAILABLE (never a wrong answer); every acknowledged put left of it is there; writes go on.
   * (Writes stop at the first failing key and go on left of it only: each failure waits out the
   * client's deadline.)
   */
  @Test
  void aTargetStoppedDuringASplitGivesUpTheSplitAndTheRestStaysWhole(Random random)
      throws Exception {
    start("none");
    TreeClient client =
        new TreeClient(
            cluster.client(
                io.ferrite.kernel.client.ClientOptions.builder(
                        CREDENTIALS.as(io.ferrite.fabric.Role.CLIENT))
                    .rpcTimeout(java.time.Duration.ofSeconds(1))
                    .opTimeout(java.time.Duration.ofSeconds(1))
                    .connectTimeout(java.time.Duration.ofSeconds(1))));
    Tree tree = client.create("t");
    int home = client.list().get(0).server();
    int target = services.keySet().stream().filter(id -> id != home).findFirst().orElseThrow();
    MemoryServer stopped = server(target);
    AtomicBoolean stop = new AtomicBoolean();
    int[] remoteSplits = {0};
    TreeService.testSplitStep =
        s -> {
          if (s.equals("remote-begun")
              && Thread.currentThread().getName().equals("tree-splitter-" + home)
              && ++remoteSplits[0] == 2
              && stop.compareAndSet(false, true)) {
            stopped.close();
          }
        };
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 6000; i++) {
      order.add(i);
    }
    Collections.shuffle(order, random);
    TreeMap<byte[], byte[]> acked = TreeModel.model();
    byte[] failed = null;
    int ackedAfter = 0;
    for (int i : order) {
      byte[] k = key(i);
      if (failed != null && java.util.Arrays.compareUnsigned(k, failed) >= 0) {
        continue;
      }
      try {
        tree.put(k, key(i + 1));
        acked.put(k, key(i + 1));
        ackedAfter += failed != null ? 1 : 0;
      } catch (FerriteException e) {
        assertUnavailable(e, target);
        assertTrue(stop.get(), "a failure only once the server stopped: " + e);
        failed = failed == null || java.util.Arrays.compareUnsigned(k, failed) < 0 ? k : failed;
      }
    }
    assertTrue(stop.get(), "no second remote split from home");
    cluster.servers.remove(stopped);
    assertTrue(failed != null, "some key was in the stopped server's meganode");
    assertTrue(ackedAfter > 100, "writes went on: " + ackedAfter);
    // Every acknowledged put: its value, or (in a meganode of the stopped server) UNAVAILABLE.
    byte[] firstBad = null;
    int bad = 0;
    for (Map.Entry<byte[], byte[]> e : acked.entrySet()) {
      try {
        assertArrayEquals(e.getValue(), tree.get(e.getKey(), Tree.Path.SERVER), "acked put");
      } catch (FerriteException ex) {
        assertUnavailable(ex, target);
        firstBad = firstBad == null ? e.getKey() : firstBad;
        bad++;
      }
    }
    assertTrue(firstBad != null && bad < acked.size() / 2, "the stopped server's keys: " + bad);
    TreeMap<byte[], byte[]> left = TreeModel.model();
    left.putAll(acked.headMap(firstBad, false));
    for (Tree.Path path : new Tree.Path[] {Tree.Path.SERVER, Tree.Path.CLIENT}) {
      TreeModel.assertPairs(
          TreeModel.scan(left, null, null, Integer.MAX_VALUE),
          new ArrayList<>(tree.scan(null, firstBad, Integer.MAX_VALUE, path)),
          "scan left of the stopped server's first meganode " + path);
    }
    // The stopped server said goodbye (DEAD at the master): the DROP of whatever the given-up split
    // made there is not sent for ever (its pending copy would resolve DROP when it asks).
    await(
        () -> !services.get(home).remote().owedDrops.containsValue(target),
        "the DROP owed to the DEAD server forgotten");
    long[] stats = tree.stats();
    assertEquals(1, stats[5], "the stopped server not counted, and said so: " + stats[5]);
    assertEquals(
        TreeShape.stats(cluster, server(home), info(client, "t").id())[0],
        stats[0],
        "the home server's meganodes counted");
  }

  /**
   * {@link Tree#stats()} counts every server's meganodes (each server's own STATS, summed here),
   * none left out.
   */
  private void assertWholeStats(Tree tree, TreeClient client, String when) {
    int[] per = TreeShape.meganodesPerServer(cluster, client, "t");
    long[] stats = tree.stats();
    assertEquals(
        java.util.Arrays.stream(per).sum(),
        stats[0],
        when + ": meganodes of every server " + java.util.Arrays.toString(per));
    assertEquals(0, stats[5], when + ": every server counted");
  }

  /**
   * A guest server stopped (its log kept) while its tree is dropped at home misses the DROP_TREE
   * (home gives up on it once the master declares it DEAD); restarted, it asks the home, which no
   * longer holds the tree, and drops its meganodes of it. A guest tree still at home is kept.
   */
  @Test
  void aGuestDownWhenItsTreeWasDroppedDropsItsMeganodesAtRestart(Random random) throws Exception {
    start("always");
    TreeClient client = new TreeClient(cluster.client());
    Tree tree = client.create("t");
    Tree kept = client.create("kept");
    int home = info(client, "t").server();
    int guest = services.keySet().stream().filter(id -> id != home).findFirst().orElseThrow();
    long id = info(client, "t").id();
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 4000; i++) {
      order.add(i);
    }
    Collections.shuffle(order, random);
    for (int i : order) {
      tree.put(key(i), key(i + 1));
      kept.put(key(i), key(i + 2));
    }
    assertTrue(
        TreeShape.serversWithMeganodes(cluster, client, "t") == 2
            && TreeShape.serversWithMeganodes(cluster, client, "kept") == 2,
        "both trees have meganodes on the guest");
    MemoryServer stopped = server(guest);
    cluster.servers.remove(stopped);
    services.remove(guest);
    stopped.close();
    assertTrue(client.drop("t"), "dropped at home");
    cluster.startServer(stopped.name());
    MemoryServer back = server(guest);
    assertTrue(
        services.get(guest).lastReplay().guests.containsKey(id),
        "the replay brought the dropped tree back as a guest");
    await(
        () -> TreeShape.stats(cluster, back, id) == null,
        "the guest dropped its meganodes of the tree its home dropped");
    await(
        () -> services.get(guest).remote().guestsToCheck.isEmpty(),
        "every guest tree checked (the kept one too)");
    long[] still = TreeShape.stats(cluster, back, info(client, "kept").id());
    assertTrue(still != null && still[0] >= 1, "the tree still at home is kept on the guest");
    Tree again = new TreeClient(cluster.client()).open("kept");
    for (int i = 0; i < 4000; i++) {
      assertArrayEquals(key(i + 2), again.get(key(i), Tree.Path.SERVER), "kept " + i);
    }
  }

  private static TreeClient.TreeInfo info(TreeClient client, String name) {
    return client.list().stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
  }

  /** UNAVAILABLE naming server {@code id}: the clear error of a meganode on a stopped server. */
  private static void assertUnavailable(FerriteException e, int id) {
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), "a clear error: " + e);
    assertTrue(e.getMessage().contains("server " + id), "names server " + id + ": " + e);
  }

  /** The server-to-server opcodes refuse a CLIENT (docs/SECURITY.md): nothing made or dropped. */
  @Test
  void aClientCannotCallTheServerOnlyOpcodes() throws Exception {
    start("none");
    TreeClient client = new TreeClient(cluster.client());
    client.create("t").put(key(1), key(2));
    int home = client.list().get(0).server();
    for (int opcode = TreeProtocol.ADOPT; opcode <= TreeProtocol.INSERT_CHILD; opcode++) {
      int op = opcode;
      FerriteException e =
          assertThrows(
              FerriteException.class,
              () ->
                  cluster
                      .client()
                      .callSync(
                          home,
                          TreeProtocol.SERVER_SERVICE,
                          op,
                          new Wire.Writer().i64(1).i32(1).i32(1).i32(1).toBuffer()));
      assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), "opcode " + op + ": " + e);
    }
    int[] per = TreeShape.meganodesPerServer(cluster, client, "t");
    assertEquals(1, per[0] + per[1], "no meganode made by a client");
  }
}
