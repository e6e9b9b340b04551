package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.kv.master.KvDirectory.Move;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Regions a shard no longer uses are freed (docs/KV.md "Freeing regions"), on a real cluster in
 * this JVM, for both layouts and with readers over shm (reading their own mappings of the region
 * files) and over tcp: after resizes and after a rebalance the servers hold exactly the regions the
 * current layouts name (the kv service's regions in the master's directory, the region files in the
 * servers' shm directories, the shards' stats), no process maps a freed region file once the JVM
 * collected the released mappings, and readers running meanwhile never read a wrong value or miss a
 * key (and the JVM does not crash). Seeded.
 */
@ExtendWith(SeedExtension.class)
class RegionFreeTest {
  @TempDir Path dir;
  ClusterHarness cluster;

  @BeforeEach
  void start() throws Exception {
    cluster =
        new ClusterHarness(
            dir,
            KvCluster.CREDENTIALS,
            true,
            Map.of(
                FerriteConfig.CAPACITY_DRAM, "64m",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.DEAD_TIMEOUT, "2s",
                FerriteConfig.SESSION_LEASE, "5s"));
    cluster.startMaster();
    cluster.startServer("kv0");
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static Stream<Arguments> layoutsAndFabrics() {
    List<Arguments> out = new ArrayList<>();
    for (TableOptions.Layout l : TableOptions.Layout.values()) {
      for (String f : List.of("shm", "tcp")) {
        out.add(Arguments.of(l, f));
      }
    }
    return out.stream();
  }

  static TableOptions options(TableOptions.Layout layout, int shards) {
    return TableOptions.DEFAULTS
        .withLayout(layout)
        .withShards(shards)
        .withSlotsPerShard(256)
        .withExtents(64 << 10, 8)
        .withLimits(256, 4 << 10);
  }

  static byte[] key(int i) {
    return ("key-" + i).getBytes(StandardCharsets.UTF_8);
  }

  /** {@code key:version} and padding: inline for some keys, out of line for others. */
  static byte[] value(int i, long version) {
    byte[] head = ("key-" + i + ":" + version + ":").getBytes(StandardCharsets.UTF_8);
    return Arrays.copyOf(head, head.length + (i % 3 == 0 ? 300 : 4));
  }

  /** Whether {@code v} is a value some writer wrote for key {@code i}. */
  static boolean valueOf(int i, byte[] v) {
    byte[] head = ("key-" + i + ":").getBytes(StandardCharsets.UTF_8);
    return v != null
        && v.length >= head.length
        && Arrays.equals(Arrays.copyOf(v, head.length), head);
  }

  /**
   * Readers (get on one client, multiGet on another, each with its own handle so it meets stale
   * layouts) and one writer (overwrites) over {@code fabric}, until {@link #stopAndCheck}.
   */
  final class Load {
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    final AtomicLong reads = new AtomicLong();
    final List<Thread> threads = new ArrayList<>();
    final List<KvTable> handles = new ArrayList<>();

    Load(String table, String fabric, int keys, long seed) {
      for (int r = 0; r < 2; r++) {
        boolean batched = r == 1;
        KvTable h = new KvClient(cluster.client(fabric)).table(table);
        handles.add(h);
        Random random = new Random(seed + r);
        run(
            "reader-" + r,
            () -> {
              while (!stop.get()) {
                if (batched) {
                  List<Integer> is = new ArrayList<>();
                  List<byte[]> ks = new ArrayList<>();
                  for (int j = 0; j < 16; j++) {
                    int i = random.nextInt(keys);
                    is.add(i);
                    ks.add(key(i));
                  }
                  List<byte[]> vs = h.multiGet(ks);
                  for (int j = 0; j < is.size(); j++) {
                    check(is.get(j), vs.get(j));
                  }
                } else {
                  int i = random.nextInt(keys);
                  check(i, h.get(key(i)));
                }
              }
            });
      }
      KvTable w = new KvClient(cluster.client(fabric)).table(table);
      run(
          "writer",
          () -> {
            for (long version = 1; !stop.get(); version++) {
              int i = (int) (version % keys);
              w.put(key(i), value(i, version));
            }
          });
    }

    private void check(int i, byte[] v) {
      reads.incrementAndGet();
      if (!valueOf(i, v)) {
        failure.compareAndSet(
            null,
            new AssertionError(
                "key "
                    + i
                    + ": "
                    + (v == null ? "missing" : new String(v, StandardCharsets.UTF_8))));
      }
    }

    private void run(String name, Runnable body) {
      Thread t =
          new Thread(
              () -> {
                try {
                  body.run();
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              name);
      t.start();
      threads.add(t);
    }

    void stopAndCheck(TestSeed seed) throws InterruptedException {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      if (failure.get() != null) {
        throw new AssertionError(seed.toString(), failure.get());
      }
      assertTrue(reads.get() > 0, "the readers read");
    }
  }

  /** Every region the current layouts of {@code table} name on {@code server}. */
  static Set<Integer> namedRegions(KvTable fresh, int server) {
    Set<Integer> ids = new TreeSet<>();
    for (int s = 0; s < fresh.info().options().shards(); s++) {
      if (fresh.serverOf(s) != server) {
        continue;
      }
      ShardLayout l = fresh.layout(s);
      ids.add(l.entries().regionId());
      for (RegionRef r : l.extents()) {
        ids.add(r.regionId());
      }
    }
    return ids;
  }

  /** The kv service's regions of {@code server} in the master's directory. */
  static Set<Integer> kvRegions(FerriteClient c, int server) {
    return c.masterStub().regions(server).stream()
        .filter(r -> r.service().equals("kv"))
        .map(r -> r.ref().regionId())
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /** The region files of server {@code name} in its shm directory, by id. */
  Set<Integer> regionFiles(String name) throws IOException {
    Path d = cluster.shmDir.resolve("ferrite-" + KvCluster.CREDENTIALS.clusterId()).resolve(name);
    try (Stream<Path> s = Files.list(d)) {
      return s.map(p -> p.getFileName().toString())
          // Block-pool regions' key files (region-<id>.keys) are not regions.
          .filter(n -> n.startsWith("region-") && !n.endsWith(".keys"))
          .map(n -> Integer.parseInt(n.substring("region-".length())))
          .collect(Collectors.toCollection(TreeSet::new));
    }
  }

  /** What the master lists for {@code server}: block-pool regions and every service's. */
  static Set<Integer> allRegions(FerriteClient c, int server) {
    return c.masterStub().regions(server).stream()
        .map(RegionInfo::ref)
        .map(RegionRef::regionId)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /**
   * Waits (collecting garbage) until no mapping of a deleted region file under the cluster's shm
   * directory is left in this process: servers and shm clients both let go of every freed region.
   */
  void awaitNoFreedRegionMapped() throws Exception {
    String root = cluster.shmDir.toAbsolutePath().toString();
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      List<String> left;
      try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
        left =
            lines
                .filter(l -> l.contains(root) && l.contains("/region-") && l.endsWith("(deleted)"))
                .toList();
      }
      if (left.isEmpty()) {
        return;
      }
      assertTrue(System.nanoTime() < deadline, "freed regions still mapped: " + left);
      System.gc();
      Thread.sleep(20);
    }
  }

  /** Creates table {@code name} and puts version 0 of keys 0 to {@code keys - 1}. */
  static KvTable filled(KvClient kv, String name, TableOptions options, int keys) {
    KvTable t = kv.createTable(name, options);
    for (int i = 0; i < keys; i++) {
      t.put(key(i), value(i, 0));
    }
    return t;
  }

  /** Whether every handle caches the layout {@code fresh} has, for every shard. */
  static boolean layoutsCaughtUp(List<KvTable> handles, KvTable fresh) {
    for (KvTable h : handles) {
      for (int s = 0; s < fresh.info().options().shards(); s++) {
        if (h.layout(s).epoch() != fresh.layout(s).epoch()) {
          return false;
        }
      }
    }
    return true;
  }

  @ParameterizedTest
  @MethodSource("layoutsAndFabrics")
  void eightResizesUnderReadersLeaveExactlyTheRegionsTheLayoutNames(
      TableOptions.Layout layout, String fabric, TestSeed seed) throws Exception {
    FerriteClient setup = cluster.adminClient(fabric);
    KvClient kv = new KvClient(setup);
    int keys = 200;
    KvTable t = filled(kv, "grow", options(layout, 2), keys);
    int server = t.serverOf(0);
    Set<Integer> before = kvRegions(setup, server);
    Load load = new Load("grow", fabric, keys, seed.value());
    for (int r = 1; r <= 8; r++) {
      t.resizeShard(r % 2, 256 + 64 * r);
      t.resizeShard((r + 1) % 2, 256 + 64 * r);
    }
    load.stopAndCheck(seed);
    // The handles read on until each has met the poison or NO_SUCH_REGION in both shards, fetched
    // the layout and released what the new one no longer names. Their gets are answered by extent
    // hints (a resize leaves the extents current), so only the one lookup in
    // KvTable.TABLE_CHECK_EVERY that reads the table anyway notices the resize: a handle whose
    // every key has a hint must still let go of the old arrays.
    KvTable fresh = new KvClient(setup).table("grow");
    for (int pass = 0; !layoutsCaughtUp(load.handles, fresh); pass++) {
      assertTrue(
          pass < 50, "handles never noticed the resizes: " + load.handles.get(0).lookupStats());
      for (KvTable h : load.handles) {
        for (int i = 0; i < keys; i++) {
          assertTrue(valueOf(i, h.get(key(i))), "key " + i);
        }
      }
    }
    Set<Integer> named = namedRegions(fresh, server);
    assertEquals(named, kvRegions(setup, server), "the kv regions are those the layouts name");
    assertFalse(named.containsAll(before), "resized-away arrays were freed: " + before);
    Set<Integer> files = regionFiles("kv0");
    assertEquals(allRegions(setup, server), files, "region files are the listed regions");
    assertTrue(files.containsAll(named), files + " vs " + named);
    int regions = 0;
    long bytes = 0;
    for (ShardStats s : fresh.stats()) {
      regions += s.regions();
      bytes += s.regionBytes();
    }
    assertEquals(named.size(), regions, "ShardStats regions");
    long namedBytes = 0;
    for (int s = 0; s < 2; s++) {
      namedBytes += fresh.layout(s).entries().length();
      for (RegionRef r : fresh.layout(s).extents()) {
        namedBytes += r.length();
      }
    }
    assertEquals(namedBytes, bytes, "ShardStats regionBytes");
    awaitNoFreedRegionMapped();
  }

  @ParameterizedTest
  @MethodSource("layoutsAndFabrics")
  void aRebalanceLeavesNoRegionOfAMovedShardOnItsOldServer(
      TableOptions.Layout layout, String fabric, TestSeed seed) throws Exception {
    FerriteClient setup = cluster.adminClient(fabric);
    KvClient kv = new KvClient(setup);
    int keys = 400;
    KvTable t = filled(kv, "spread", options(layout, 8), keys);
    int first = t.serverOf(0);
    Load load = new Load("spread", fabric, keys, seed.value());
    MemoryServer added = cluster.startServer("kv1");
    cluster.awaitServers(2);
    KvRebalancer.Report rep = new KvRebalancer(kv, line -> {}).rebalance(List.of());
    load.stopAndCheck(seed);
    assertTrue(rep.ok(), rep.failures().toString());
    assertFalse(rep.moved().isEmpty(), "the joining server takes some shards");
    for (KvTable h : load.handles) {
      for (int i = 0; i < keys; i++) {
        assertTrue(valueOf(i, h.get(key(i))), "key " + i);
      }
    }

    KvTable fresh = new KvClient(setup).table("spread");
    for (Move m : rep.moved()) {
      assertEquals(first, m.from());
      assertEquals(added.serverId(), fresh.serverOf(m.shard()));
    }
    assertEquals(namedRegions(fresh, first), kvRegions(setup, first), "old server");
    assertEquals(namedRegions(fresh, added.serverId()), kvRegions(setup, added.serverId()));
    assertEquals(allRegions(setup, first), regionFiles("kv0"));
    assertEquals(allRegions(setup, added.serverId()), regionFiles("kv1"));
    // The old server keeps a tombstone per moved shard: MOVED, regions freed (state 3).
    Map<Integer, Integer> states = shardStates(setup, first, fresh.info().tableId());
    for (Move m : rep.moved()) {
      assertEquals(3, states.get(m.shard()), "shard " + m.shard() + ": " + states);
      FerriteException moved =
          assertThrows(
              FerriteException.class,
              () ->
                  call(
                      setup,
                      first,
                      KvProtocol.LAYOUT,
                      new Wire.Writer().i64(fresh.info().tableId()).i32(m.shard())));
      assertEquals(ErrorCode.MOVED, moved.code());
    }
    awaitNoFreedRegionMapped();

    // Bad input: a serving shard or a wrong new server is refused by name; the shard serves on.
    Move one = rep.moved().get(0);
    int serving = firstShardOn(fresh, first);
    FerriteException busy =
        assertThrows(
            FerriteException.class,
            () ->
                call(
                    setup,
                    first,
                    KvProtocol.RELEASE,
                    new Wire.Writer()
                        .i64(fresh.info().tableId())
                        .i32(serving)
                        .i32(added.serverId())));
    assertEquals(ErrorCode.INVALID_ARGUMENT, busy.code(), busy.getMessage());
    assertEquals(
        0,
        new Wire.Reader(
                call(
                    setup,
                    first,
                    KvProtocol.RELEASE,
                    new Wire.Writer()
                        .i64(fresh.info().tableId())
                        .i32(one.shard())
                        .i32(added.serverId())),
                "release")
            .u8("freed"),
        "released already: idempotent");
    FerriteException wrongTo =
        assertThrows(
            FerriteException.class,
            () ->
                call(
                    setup,
                    first,
                    KvProtocol.RELEASE,
                    new Wire.Writer().i64(fresh.info().tableId()).i32(one.shard()).i32(first)));
    assertEquals(ErrorCode.INVALID_ARGUMENT, wrongTo.code(), wrongTo.getMessage());
    for (int i = 0; i < keys; i++) {
      assertTrue(valueOf(i, fresh.get(key(i))), "key " + i);
    }
    fresh.put(key(0), value(0, 99));
    assertTrue(valueOf(0, fresh.get(key(0))));

    // Dropping the table frees every shard's regions on both servers; a handle that reads again
    // hears NOT_FOUND and lets go of its mappings.
    kv.dropTable("spread");
    assertEquals(Set.of(), kvRegions(setup, first));
    assertEquals(Set.of(), kvRegions(setup, added.serverId()));
    Set<Integer> pool = new HashSet<>(allRegions(setup, first));
    assertEquals(pool, regionFiles("kv0"));
    List<KvTable> readers = new ArrayList<>(load.handles);
    readers.add(fresh); // on the setup client, whose connections map every shard too
    for (KvTable h : readers) {
      for (int i = 0; i < 20; i++) {
        int k = i;
        FerriteException dropped = assertThrows(FerriteException.class, () -> h.get(key(k)));
        assertEquals(ErrorCode.NOT_FOUND, dropped.code(), dropped.getMessage());
      }
    }
    awaitNoFreedRegionMapped();
  }

  static int firstShardOn(KvTable t, int server) {
    for (int s = 0; s < t.info().options().shards(); s++) {
      if (t.serverOf(s) == server) {
        return s;
      }
    }
    throw new AssertionError("no shard left on server " + server);
  }

  static Map<Integer, Integer> shardStates(FerriteClient c, int server, long tableId) {
    Wire.Reader r =
        new Wire.Reader(call(c, server, KvProtocol.SHARDS, new Wire.Writer()), "shards");
    int n = r.i32("n");
    Map<Integer, Integer> out = new java.util.HashMap<>();
    for (int i = 0; i < n; i++) {
      long id = r.i64("tableId");
      int shard = r.i32("shard");
      int state = r.u8("state");
      r.i32("count");
      if (id == tableId) {
        out.put(shard, state);
      }
    }
    return out;
  }

  static ByteBuffer call(FerriteClient c, int server, int opcode, Wire.Writer body) {
    return Futures.join(c.call(server, KvProtocol.SERVER_SERVICE, opcode, body.toBuffer()));
  }
}
