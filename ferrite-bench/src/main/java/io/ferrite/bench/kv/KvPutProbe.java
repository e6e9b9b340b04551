package io.ferrite.bench.kv;

import io.ferrite.bench.IoThreadCpu;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Where the time of a tcp put and of a 16-pair multiPut goes, in CPU time as well as wall time, so
 * that it can be read on a loaded machine: one caller thread runs {@code put} and {@code multiPut}
 * of 16 pairs (zipfian keys, as {@code bench kv --vs redis}), beside the RPC that does nothing with
 * a request of the put's size (PING, the put's ceiling) and beside redis-server's SET and 16
 * pipelined SETs. Per operation it prints the wall time, the caller's CPU, the server's and the
 * client's tcp I/O threads' CPU (Ferrite) or redis-server's CPU (from /proc, 10 ms ticks: read it
 * over many ops).
 *
 * <pre>
 * java -cp 'ferrite-cli/target/lib/*' io.ferrite.bench.kv.KvPutProbe [VALUE_BYTES [LAYOUT [OPS [ROUNDS [WHICH [THREADS]]]]]]
 * </pre>
 *
 * <p>With {@code THREADS} > 1 every operation runs on that many caller threads at once (each with
 * its own Redis connection), as {@code bench kv --vs redis} runs its 16-thread cells: then the line
 * also gives the throughput and the whole process's CPU per op (the kv writer threads that apply
 * queued writes included), and "caller CPU" is the callers' sum per op.
 */
public final class KvPutProbe {
  private static final byte[] SET = "SET".getBytes(StandardCharsets.US_ASCII);
  private static final int BATCH = 16;

  private KvPutProbe() {}

  public static void main(String[] args) throws Exception {
    int size = args.length > 0 ? Integer.parseInt(args[0]) : 1024;
    TableOptions.Layout layout =
        args.length > 1
            ? TableOptions.Layout.valueOf(args[1].toUpperCase(Locale.ROOT))
            : TableOptions.Layout.HOPSCOTCH;
    int ops = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    // Which of put, ping, set, multiput, set16 to run (e.g. under a profiler); default all.
    List<String> only =
        args.length > 4
            ? List.of(args[4].split(","))
            : List.of("put", "ping", "set", "multiput", "set16");
    int threads = args.length > 5 ? Integer.parseInt(args[5]) : 1;
    int keys = 20_000;
    Path root = Files.createTempDirectory(Path.of("/tmp"), "ferrite-kvputprobe-");
    List<AutoCloseable> open = new ArrayList<>();
    try {
      String address = KvBench.startCluster(root, open);
      RedisPeer redis = RedisPeer.start(Files.createDirectories(root.resolve("redis")));
      open.add(redis);
      FerriteClient c = KvBench.connect(address, "tcp");
      open.add(c);
      KvTable t =
          new KvClient(c).createTable("probe", KvBench.tableOptions(layout, keys, size, false));
      byte[][] ks = new byte[keys][];
      byte[] value = new byte[size];
      RedisPeer.Conn rc = redis.connect();
      for (int i = 0; i < keys; i++) {
        ks[i] = KvBench.key(i);
        t.put(ks[i], value);
        rc.command(SET, ks[i], value);
        rc.flush();
        rc.readReply();
      }
      Zipfian zipf = new Zipfian(keys);
      byte[] padding = new byte[KvBench.KEY_BYTES + size + 40];
      long pid = redis.pid();
      System.out.printf(
          Locale.ROOT,
          "%s, %d B values, %d keys, %d ops per run; per op (µs): wall, caller CPU,"
              + " server I/O CPU, client I/O CPU, redis-server CPU%n",
          layout,
          size,
          keys,
          ops);
      RedisPeer.Conn[] rcs = new RedisPeer.Conn[threads];
      rcs[0] = rc;
      for (int i = 1; i < threads; i++) {
        rcs[i] = redis.connect();
      }
      if (threads > 1) {
        System.out.println(
            "  ("
                + threads
                + " threads: ops/s, wall per op of a thread, then per op: callers' CPU, server I/O,"
                + " client I/O, the whole JVM, redis-server)");
        for (int round = 0; round < rounds; round++) {
          runMulti(only, threads, ops, pid, t, ks, value, padding, zipf, rcs);
        }
        return;
      }
      for (int round = 0; round < rounds; round++) {
        if (only.contains("put")) {
          run("put", ops, pid, r -> t.put(ks[zipf.next(r)], value));
        }
        if (only.contains("ping")) {
          run(
              "ping (an RPC of the put's size)",
              ops,
              pid,
              r -> {
                zipf.next(r);
                t.ping(0, padding);
              });
        }
        if (only.contains("set")) {
          run(
              "redis SET",
              ops,
              pid,
              r -> {
                rc.command(SET, ks[zipf.next(r)], value);
                rc.flush();
                rc.readReply();
              });
        }
        if (only.contains("multiput")) {
          run(
              "multiPut 16",
              ops / 4,
              pid,
              r -> {
                List<byte[]> kk = new ArrayList<>(BATCH);
                List<byte[]> vv = new ArrayList<>(BATCH);
                for (int k = 0; k < BATCH; k++) {
                  kk.add(ks[zipf.next(r)]);
                  vv.add(value);
                }
                t.multiPut(kk, vv);
              });
        }
        if (only.contains("set16")) {
          run(
              "redis SET x16 pipelined",
              ops / 4,
              pid,
              r -> {
                for (int k = 0; k < BATCH; k++) {
                  rc.command(SET, ks[zipf.next(r)], value);
                }
                rc.flush();
                for (int k = 0; k < BATCH; k++) {
                  rc.readReply();
                }
              });
        }
      }
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        open.get(i).close();
      }
      FileTrees.delete(root);
    }
  }

  /** A probe operation of caller thread {@code thread}. */
  private interface ThreadOp {
    void run(int thread, Random r);
  }

  private static void runMulti(
      List<String> only,
      int threads,
      int ops,
      long pid,
      KvTable t,
      byte[][] ks,
      byte[] value,
      byte[] padding,
      Zipfian zipf,
      RedisPeer.Conn[] rcs)
      throws InterruptedException {
    if (only.contains("put")) {
      runThreads("put", threads, ops, pid, (th, r) -> t.put(ks[zipf.next(r)], value));
    }
    if (only.contains("ping")) {
      runThreads(
          "ping (an RPC of the put's size)", threads, ops, pid, (th, r) -> t.ping(0, padding));
    }
    if (only.contains("set")) {
      runThreads(
          "redis SET",
          threads,
          ops,
          pid,
          (th, r) -> {
            rcs[th].command(SET, ks[zipf.next(r)], value);
            rcs[th].flush();
            rcs[th].readReply();
          });
    }
    if (only.contains("multiput")) {
      runThreads(
          "multiPut 16",
          threads,
          ops / 4,
          pid,
          (th, r) -> {
            List<byte[]> kk = new ArrayList<>(BATCH);
            List<byte[]> vv = new ArrayList<>(BATCH);
            for (int k = 0; k < BATCH; k++) {
              kk.add(ks[zipf.next(r)]);
              vv.add(value);
            }
            t.multiPut(kk, vv);
          });
    }
    if (only.contains("set16")) {
      runThreads(
          "redis SET x16 pipelined",
          threads,
          ops / 4,
          pid,
          (th, r) -> {
            for (int k = 0; k < BATCH; k++) {
              rcs[th].command(SET, ks[zipf.next(r)], value);
            }
            rcs[th].flush();
            for (int k = 0; k < BATCH; k++) {
              rcs[th].readReply();
            }
          });
    }
  }

  /**
   * Runs {@code op} {@code ops} times on each of {@code threads} threads at once (after a warm-up);
   * prints ops/s, wall per op, and per op: the callers' CPU, the server's and the client's tcp I/O
   * threads', the whole process's, redis-server's.
   */
  private static void runThreads(String name, int threads, int ops, long pid, ThreadOp op)
      throws InterruptedException {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long self = ProcessHandle.current().pid();
    long[] cpu = new long[threads];
    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads + 1);
    java.util.concurrent.CyclicBarrier end = new java.util.concurrent.CyclicBarrier(threads + 1);
    java.util.concurrent.atomic.AtomicReference<Throwable> failed =
        new java.util.concurrent.atomic.AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      int th = i;
      Thread x =
          new Thread(
              () -> {
                Random r = new Random(42 + th);
                try {
                  for (int k = 0; k < ops / 4; k++) {
                    op.run(th, r); // warm-up
                  }
                  start.await();
                  long c0 = mx.getCurrentThreadCpuTime();
                  for (int k = 0; k < ops; k++) {
                    op.run(th, r);
                  }
                  cpu[th] = mx.getCurrentThreadCpuTime() - c0;
                  end.await();
                } catch (Throwable e) {
                  failed.compareAndSet(null, e);
                  start.reset();
                  end.reset();
                }
              },
              "probe-caller-" + i);
      x.start();
      ts.add(x);
    }
    try {
      start.await();
    } catch (java.util.concurrent.BrokenBarrierException e) {
      throw new IllegalStateException("a caller failed", failed.get());
    }
    Map<String, Long> io0 = IoThreadCpu.byGroup();
    Map<String, Long> named0 = cpuByName();
    long redis0 = processCpu(pid);
    long proc0 = processCpu(self);
    long t0 = System.nanoTime();
    try {
      end.await();
    } catch (java.util.concurrent.BrokenBarrierException e) {
      throw new IllegalStateException("a caller failed", failed.get());
    }
    long wall = System.nanoTime() - t0;
    long proc = processCpu(self) - proc0;
    Map<String, Long> io1 = IoThreadCpu.byGroup();
    Map<String, Long> named1 = cpuByName();
    long redis = processCpu(pid) - redis0;
    for (Thread x : ts) {
      x.join();
    }
    long total = (long) ops * threads;
    long callers = 0;
    for (long c : cpu) {
      callers += c;
    }
    long server = io1.getOrDefault("server-io", 0L) - io0.getOrDefault("server-io", 0L);
    long client = io1.getOrDefault("client-io", 0L) - io0.getOrDefault("client-io", 0L);
    System.out.printf(
        Locale.ROOT,
        "  %-34s %9.0f/s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f%n",
        name,
        total * 1e9 / wall,
        wall / 1e3 / total * threads,
        callers / 1e3 / total,
        server / 1e3 / total,
        client / 1e3 / total,
        proc / 1e3 / total,
        redis / 1e3 / total);
    // The other threads of the JVM that took CPU (by name, digits dropped), per op.
    StringBuilder others = new StringBuilder("    others per op:");
    named1.entrySet().stream()
        .map(e -> Map.entry(e.getKey(), e.getValue() - named0.getOrDefault(e.getKey(), 0L)))
        .filter(
            e -> !e.getKey().startsWith("ferrite-tcp-") && !e.getKey().startsWith("probe-caller"))
        .sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
        .limit(6)
        .forEach(
            e ->
                others.append(
                    String.format(
                        Locale.ROOT, " %s %.1f", e.getKey(), e.getValue() / 1e3 / total)));
    System.out.println(others);
  }

  /** CPU time so far (ns) of this JVM's live threads, by name with digits dropped. */
  private static Map<String, Long> cpuByName() {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Map<String, Long> m = new java.util.TreeMap<>();
    for (java.lang.management.ThreadInfo ti : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (ti != null) {
        long c = mx.getThreadCpuTime(ti.getThreadId());
        if (c > 0) {
          m.merge(ti.getThreadName().replaceAll("[0-9]+", "N"), c, Long::sum);
        }
      }
    }
    return m;
  }

  /** redis-server's CPU time so far (ns): utime + stime of /proc/PID/stat, in 10 ms ticks. */
  /** CPU time of process {@code pid} (user + system, from /proc, 10 ms ticks), ns; 0 if unknown. */
  private static long processCpu(long pid) {
    try {
      String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
      // After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based over the whole line).
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  private static void run(String name, int ops, long pid, KvBench.Op op) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Random r = new Random(42);
    for (int i = 0; i < ops / 4; i++) {
      op.run(r); // warm-up
    }
    Map<String, Long> io0 = IoThreadCpu.byGroup();
    long redis0 = processCpu(pid);
    long cpu0 = mx.getCurrentThreadCpuTime();
    long t0 = System.nanoTime();
    for (int i = 0; i < ops; i++) {
      op.run(r);
    }
    long wall = System.nanoTime() - t0;
    long cpu = mx.getCurrentThreadCpuTime() - cpu0;
    Map<String, Long> io1 = IoThreadCpu.byGroup();
    long redis = processCpu(pid) - redis0;
    long server = io1.getOrDefault("server-io", 0L) - io0.getOrDefault("server-io", 0L);
    long client = io1.getOrDefault("client-io", 0L) - io0.getOrDefault("client-io", 0L);
    System.out.printf(
        Locale.ROOT,
        "  %-34s %8.1f %8.1f %8.1f %8.1f %8.1f%n",
        name,
        wall / 1e3 / ops,
        cpu / 1e3 / ops,
        server / 1e3 / ops,
        client / 1e3 / ops,
        redis / 1e3 / ops);
  }
}
