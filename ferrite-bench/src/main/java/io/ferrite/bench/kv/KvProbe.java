package io.ferrite.bench.kv;

import io.ferrite.bench.IoThreadCpu;
import io.ferrite.fabric.Batch;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.ShardLayout;
import io.ferrite.kv.TableOptions;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * Where the time of a tcp get goes, in CPU time rather than throughput, so that it can be read on a
 * loaded machine: one caller thread runs {@code get} and {@code multiGet} of 16 keys on a hopscotch
 * table (zipfian keys, as {@code bench kv}), and beside each the same fabric reads raw — what a
 * hinted lookup reads (the extent of each key, one batch), no verification. For each it prints per
 * operation the wall time, the caller's CPU time and the server's tcp I/O threads' CPU time; the
 * differences between a kv operation and its raw reads are the client's and the server's cost of
 * the kv layer.
 *
 * <pre>
 * java -cp 'ferrite-cli/target/lib/*' io.ferrite.bench.kv.KvProbe [VALUE_BYTES [KEYS [OPS [ROUNDS]]]]
 * </pre>
 */
public final class KvProbe {
  private KvProbe() {}

  public static void main(String[] args) throws Exception {
    int size = args.length > 0 ? Integer.parseInt(args[0]) : 1024;
    int keys = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
    int ops = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    Path root = Files.createTempDirectory(Path.of("/tmp"), "ferrite-kvprobe-");
    List<AutoCloseable> open = new ArrayList<>();
    try {
      String address = KvBench.startCluster(root, open);
      FerriteClient c = KvBench.connect(address, "tcp");
      open.add(c);
      KvTable t =
          new KvClient(c)
              .createTable(
                  "probe", KvBench.tableOptions(TableOptions.Layout.HOPSCOTCH, keys, size, false));
      byte[][] ks = new byte[keys][];
      byte[] value = new byte[size];
      for (int i = 0; i < keys; i++) {
        ks[i] = KvBench.key(i);
        t.put(ks[i], value);
      }
      Zipfian zipf = new Zipfian(keys);
      FabricConnection conn = c.connection(t.serverOf(0));
      ShardLayout l = t.layout(0);
      int extent = Extents.HEADER + KvBench.KEY_BYTES + size;
      System.out.printf(
          Locale.ROOT,
          "%d B values, %d keys, %d ops per run; per op: wall, caller CPU, server I/O CPU (µs)%n",
          size,
          keys,
          ops);
      for (int round = 0; round < rounds; round++) {
        run("get", ops, r -> t.get(ks[zipf.next(r)]));
        run("raw get (an extent-sized read)", ops, r -> raw(conn, l, r, zipf, 1, extent));
        run(
            "multiGet 16",
            ops / 4,
            r -> {
              List<byte[]> batch = new ArrayList<>(16);
              for (int k = 0; k < 16; k++) {
                batch.add(ks[zipf.next(r)]);
              }
              t.multiGet(batch);
            });
        run(
            "raw 16 (16 extent-sized reads, 1 batch)",
            ops / 4,
            r -> raw(conn, l, r, zipf, 16, extent));
      }
      System.out.println(t.lookupStats());
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        open.get(i).close();
      }
      FileTrees.delete(root);
    }
  }

  private static void raw(
      FabricConnection c, ShardLayout l, Random r, Zipfian zipf, int n, int extent) {
    RegionRef extents = l.extents().get(0);
    if (n == 1) {
      zipf.next(r);
      c.readSync(extents, 0, ByteBuffer.wrap(new byte[extent]));
      return;
    }
    Batch b = c.batch();
    for (int k = 0; k < n; k++) {
      zipf.next(r);
      b.read(extents, 0, ByteBuffer.wrap(new byte[extent]));
    }
    b.flushSync();
  }

  private static void run(String name, int ops, KvBench.Op op) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Random r = new Random(42);
    for (int i = 0; i < ops / 4; i++) {
      op.run(r); // warm-up
    }
    long server0 = IoThreadCpu.byGroup().getOrDefault("server-io", 0L);
    long cpu0 = mx.getCurrentThreadCpuTime();
    long t0 = System.nanoTime();
    for (int i = 0; i < ops; i++) {
      op.run(r);
    }
    long wall = System.nanoTime() - t0;
    long cpu = mx.getCurrentThreadCpuTime() - cpu0;
    long server = IoThreadCpu.byGroup().getOrDefault("server-io", 0L) - server0;
    System.out.printf(
        Locale.ROOT,
        "  %-44s %8.1f %8.1f %8.1f%n",
        name,
        wall / 1e3 / ops,
        cpu / 1e3 / ops,
        server / 1e3 / ops);
  }
}
