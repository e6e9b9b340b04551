package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import io.ferrite.nodes.master.NodesMaster;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.function.LongSupplier;

/**
 * Run by {@link FaceExhaustionTest} in a private mount namespace whose /dev/shm is a small tmpfs of
 * its own: a master and a memory server on tcp and shm (their region and ring files on that tmpfs,
 * {@code capacity.dram} a little under its size), filled through the faces by clients over tcp and
 * over shm (which map those files themselves). Prints one line per step for the parent to check;
 * any fault in a server or a client (a SIGBUS on an unbacked page, an InternalError) kills this JVM
 * instead of printing the last line, and an unexpected exception exits non-zero.
 */
public final class FaceExhaustionChild {
  static final String CAPACITY = "40m";
  static final long CAPACITY_BYTES = 40L << 20;
  static final int BLOCK = 1 << 20;

  private static final Credentials CREDENTIALS =
      new Credentials(
          "exhaust", "0123456789abcdef-exhaust-secret".getBytes(StandardCharsets.UTF_8));

  private FaceExhaustionChild() {}

  public static void main(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    FileStore tmpfs = Files.getFileStore(Path.of("/dev/shm"));
    Map<String, String> settings = new HashMap<>();
    settings.put(FerriteConfig.CAPACITY_DRAM, CAPACITY);
    settings.put(FerriteConfig.CAPACITY_DISK, "0"); // nothing spills out of the tmpfs
    settings.put(FerriteConfig.REGION_SIZE, "4m");
    settings.put(FerriteConfig.BLOCK_SIZE, Integer.toString(BLOCK));
    settings.put(FerriteConfig.DEAD_TIMEOUT, "5s");
    settings.put(FerriteConfig.SESSION_LEASE, "10s");
    try (ClusterHarness cluster = new ClusterHarness(data, CREDENTIALS, true, settings)) {
      cluster.startMaster(extensions());
      cluster.startServer("s1");
      cluster.awaitServers(1);
      FerriteClient admin = cluster.adminClient("tcp");
      Map<String, FerriteClient> clients = new HashMap<>();
      for (String fabric : List.of("tcp", "shm")) {
        clients.put(fabric, cluster.client(fabric));
      }
      // Every client reaches the server once before the baseline: their ring files are part of it.
      Nodes warm = new Nodes(clients.get("shm"));
      writeFile(warm, "/warm", 0);
      warm.remove("/warm", false);
      LongSupplier dram = () -> dramUsed(admin);
      LongSupplier shm = () -> used(tmpfs);
      awaitEquals(0, dram);
      long tmpfsBase = shm.getAsLong();
      say(
          "started: dram used %d B, tmpfs used %d of %d B",
          dram.getAsLong(), tmpfsBase, tmpfs.getTotalSpace());

      // 1. Files, over tcp then again over shm, until NO_SPACE; all removed each time.
      for (String fabric : List.of("tcp", "shm")) {
        Nodes nodes = new Nodes(clients.get(fabric));
        List<String> files = new ArrayList<>();
        String refused = fill(nodes, "/" + fabric + "-", files);
        for (int i = 0; i < files.size(); i++) {
          checkFile(nodes, files.get(i), i);
        }
        say(
            "nodes %s: %d files of %d B then %s, all read back",
            fabric, files.size(), BLOCK, refused);
        for (String f : files) {
          nodes.remove(f, false);
        }
        // The master frees a removed file's blocks after its reclaim grace (50 ms here).
        awaitEquals(0, dram);
        say("nodes %s: removed, dram used %d", fabric, dram.getAsLong());
      }

      // 2. Kv: a table larger than the capacity, then values past it.
      KvClient kv = new KvClient(clients.get("shm"));
      try {
        kv.createTable("huge", TableOptions.DEFAULTS.withShards(8).withSlotsPerShard(2_000_000));
        say("kv huge: created");
      } catch (FerriteException e) {
        // Refused by the capacity check, before any file was made: not by a full tmpfs.
        say(
            "kv huge: %s by %s, dram used %d",
            e.code(),
            e.getMessage().contains("capacity.dram") ? "capacity" : "other: " + e.getMessage(),
            dram.getAsLong());
      }
      TableOptions small =
          TableOptions.DEFAULTS.withShards(2).withSlotsPerShard(1024).withExtents(BLOCK, 64);
      KvTable t = kv.createTable("values", small);
      long table = dram.getAsLong();
      byte[] value = new byte[small.maxValue()];
      int put = 0;
      String refused = "never refused";
      long most = 0;
      for (; put < 4096; put++) {
        Arrays.fill(value, (byte) put);
        try {
          t.put(key(put), value);
        } catch (FerriteException e) {
          // The capacity, or the tmpfs while pool regions the table's growth retired are still
          // mapped by a shm client (released by its sweep within a second): typed either way.
          refused = e.code().name();
          break;
        }
        most = Math.max(most, dram.getAsLong());
      }
      for (int i = 0; i < put; i++) {
        byte[] got = t.get(key(i));
        if (got == null || got.length != value.length || got[got.length - 1] != (byte) i) {
          throw new AssertionError("value " + i + " lost after NO_SPACE");
        }
      }
      say(
          "kv values: table %d B, %d values of %d B then %s, dram used at most %d B of %d,"
              + " all read back",
          table, put, value.length, refused, most, CAPACITY_BYTES);
      new KvClient(admin).dropTable("values");
      say("kv dropped: dram used %d", dram.getAsLong());

      // 3. The tmpfs: what services freed went back to the block pool, nothing else stayed. A
      // freed region's memory comes back once every mapping of it is unmapped, which the JVM does
      // at a collection (MappedRegion#release: never under a racing op). The server asks for one
      // after it frees, a shm client after its sweep drops a mapping; one released after the last
      // of those waits for the next, which any later activity would bring: so asked for here.
      // Whatever is still referenced (a mapping never dropped) stays held and fails the check.
      awaitEquals(tmpfsBase, () -> collected(shm));
      say("tmpfs used %d B, after start %d B", shm.getAsLong(), tmpfsBase);
      if (shm.getAsLong() != tmpfsBase) {
        heldByMappings();
      }

      // And the server is as usable as before.
      Nodes again = new Nodes(clients.get("shm"));
      writeFile(again, "/after", 7);
      checkFile(again, "/after", 7);
      again.remove("/after", false);
    }
    say("done");
  }

  /** The extensions ServiceLoader finds, with the nodes reclaim grace cut to 50 ms. */
  private static List<MasterExtension> extensions() {
    List<MasterExtension> out = new ArrayList<>();
    for (MasterExtension e : ServiceLoader.load(MasterExtension.class)) {
      out.add(e instanceof NodesMaster ? new NodesMaster(Duration.ofMillis(50)) : e);
    }
    return out;
  }

  /** Writes files of one block until a write is refused; returns the refusal's reason. */
  private static String fill(Nodes nodes, String prefix, List<String> files) {
    for (int i = 0; i < 1024; i++) {
      String path = prefix + i;
      try {
        writeFile(nodes, path, i);
      } catch (NodesException e) {
        if (nodes.exists(path)) {
          nodes.remove(path, false);
        }
        return e.reason().name();
      }
      files.add(path);
    }
    return "never refused";
  }

  private static void writeFile(Nodes nodes, String path, int fill) {
    byte[] b = new byte[BLOCK];
    Arrays.fill(b, (byte) fill);
    NodeWriter w = nodes.create(path);
    try {
      w.writeSync(ByteBuffer.wrap(b));
      w.close();
    } catch (RuntimeException e) {
      w.abort();
      throw e;
    }
  }

  private static void checkFile(Nodes nodes, String path, int fill) {
    NodeReader r = nodes.open(path);
    ByteBuffer got = ByteBuffer.allocate(BLOCK);
    r.readFully(0, got);
    for (int at = 0; at < BLOCK; at += 4096) {
      if (got.get(at) != (byte) fill) {
        throw new AssertionError(path + " differs at " + at);
      }
    }
  }

  /**
   * Says which files this process still maps after they were deleted (their space stays held on the
   * tmpfs until the last mapping goes): the first thing to know when the tmpfs is not back.
   */
  private static void heldByMappings() throws IOException {
    Map<String, Long> held = new java.util.TreeMap<>();
    for (String l : Files.readAllLines(Path.of("/proc/self/maps"))) {
      if (l.endsWith("(deleted)")) {
        String[] f = l.split("\\s+");
        String[] range = f[0].split("-");
        long len = Long.parseUnsignedLong(range[1], 16) - Long.parseUnsignedLong(range[0], 16);
        held.merge(f[5], len, Long::sum);
      }
    }
    held.forEach((file, len) -> System.out.println("held by a mapping: " + file + " " + len));
  }

  private static byte[] key(int i) {
    return ("k" + i).getBytes(StandardCharsets.UTF_8);
  }

  private static long dramUsed(FerriteClient c) {
    long[] dram = c.status().totals(null).get("dram");
    return dram == null ? 0 : dram[1];
  }

  private static long collected(LongSupplier v) {
    System.gc();
    return v.getAsLong();
  }

  private static long used(FileStore s) {
    try {
      return s.getTotalSpace() - s.getUnallocatedSpace();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * Waits until {@code v} reads {@code want}: frees that the master or a server makes in the
   * background (a reclaim grace, a pool regrown). Gives up after 20 s with the last value, which
   * the parent then reports as wrong.
   */
  private static void awaitEquals(long want, LongSupplier v) throws InterruptedException {
    for (int i = 0; i < 2000 && v.getAsLong() != want; i++) {
      Thread.sleep(10);
    }
  }

  private static void say(String format, Object... args) {
    System.out.println("STEP " + String.format(Locale.ROOT, format, args));
    System.out.flush();
  }
}
