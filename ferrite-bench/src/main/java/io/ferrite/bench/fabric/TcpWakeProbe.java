package io.ferrite.bench.fabric;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.ceiling.SocketCeiling;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.tcp.TcpFabric;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Whether a tcp round trip's threads were asleep when their message arrived: runs empty RPCs
 * (inline on the server's event loop, and through a dispatch thread) from one caller over the tcp
 * fabric with each given {@code tcp.poll.spin.nanos}, and prints the p50 beside the <i>voluntary
 * context switches per call</i> of the caller, the server's event loops and the dispatch threads
 * (from {@code /proc/self/task/<tid>/status}; Linux only). A thread that blocked waiting for its
 * message switched out once per call; one that was still polling did not. Not a suite: no ceiling,
 * no report. Before each setting it prints the two 8 B raw ping-pongs of {@code bench fabric}
 * (blocking, and polling: {@link SocketCeiling#measurePollPingPong}), measured the same way, so
 * that the calls can be read beside both in the same minute.
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.fabric.TcpWakeProbe 20000 0 50000
 * </pre>
 *
 * Arguments: {@code CALLS SPIN_NANOS...}. {@code -Dferrite.probe.ops=inline} (or {@code dispatch})
 * runs only that kind of call, so that a system-call count of the process ({@code perf trace -s})
 * is one kind's: {@code 2 × CALLS} calls (warm-up and timed) per setting. {@code
 * -Dferrite.probe.dispatchSpin=NANOS} sets the server's {@link ServerSpec#dispatchSpinNanos}.
 */
public final class TcpWakeProbe {
  private TcpWakeProbe() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: TcpWakeProbe CALLS SPIN_NANOS...");
      System.exit(2);
    }
    int calls = Integer.parseInt(args[0]);
    for (int a = 1; a < args.length; a++) {
      run(calls, Long.parseLong(args[a]));
    }
  }

  private static void run(int calls, long spin) throws Exception {
    Path dir = Files.createTempDirectory(FabricBench.defaultDirectory(), "ferrite-wake-");
    Credentials credentials = new Credentials("probe", new byte[32]);
    MappedRegion region = MappedRegion.create(dir.resolve("region"), 1, 1 << 20, 42L);
    RegionTable table = new RegionTable();
    table.register(region);
    FabricTuning tuning = FabricTuning.DEFAULTS.withTcpPollSpin(spin);
    try (TcpFabric fabric = new TcpFabric(null, tuning);
        FabricServer server =
            fabric.serve(
                ServerSpec.loopback(1, credentials, table, BenchEndpoint.handler(), dir)
                    .withDispatchSpinNanos(
                        Long.getLong(
                            "ferrite.probe.dispatchSpin",
                            ServerSpec.DEFAULT_DISPATCH_SPIN_NANOS)));
        FabricConnection conn = fabric.connect(server.address(), ConnectOptions.of(credentials))) {
      ByteBuffer empty = ByteBuffer.allocate(0);
      Duration deadline = Duration.ofSeconds(10);
      pingPongs(calls);
      String only = System.getProperty("ferrite.probe.ops", "");
      int[] ops =
          only.equals("inline")
              ? new int[] {BenchEndpoint.OP_INLINE}
              : only.equals("dispatch")
                  ? new int[] {BenchEndpoint.OP_EMPTY}
                  : new int[] {BenchEndpoint.OP_INLINE, BenchEndpoint.OP_EMPTY};
      for (int op : ops) {
        for (int i = 0; i < calls; i++) { // warm-up
          conn.callSync(BenchEndpoint.SERVICE, op, empty, deadline);
        }
        Map<String, Long> before = switchesByGroup();
        Map<String, Long> cpuBefore = cpuByGroup();
        long[] lat = new long[calls];
        for (int i = 0; i < calls; i++) {
          long t0 = System.nanoTime();
          conn.callSync(BenchEndpoint.SERVICE, op, empty, deadline);
          lat[i] = System.nanoTime() - t0;
        }
        Map<String, Long> cpuAfter = cpuByGroup();
        Map<String, Long> after = switchesByGroup();
        Arrays.sort(lat);
        StringBuilder sw = new StringBuilder();
        for (Map.Entry<String, Long> e : after.entrySet()) {
          double per = (e.getValue() - before.getOrDefault(e.getKey(), 0L)) / (double) calls;
          sw.append(String.format(Locale.ROOT, " %s %.2f", e.getKey(), per));
        }
        StringBuilder cpu = new StringBuilder();
        for (Map.Entry<String, Long> e : cpuAfter.entrySet()) {
          double per = (e.getValue() - cpuBefore.getOrDefault(e.getKey(), 0L)) / 1e3 / calls;
          cpu.append(String.format(Locale.ROOT, " %s %.2f", e.getKey(), per));
        }
        System.out.printf(
            Locale.ROOT,
            "spin %d ns, %s: p50 %.1f us, p99 %.1f us | voluntary switches per call:%s"
                + " | CPU us per call:%s%n",
            spin,
            op == BenchEndpoint.OP_INLINE ? "inline" : "dispatch thread",
            lat[calls / 2] / 1e3,
            lat[calls * 99 / 100] / 1e3,
            sw,
            cpu);
      }
    } finally {
      region.closeAndDelete();
      Files.deleteIfExists(dir.resolve("region"));
      Files.deleteIfExists(dir);
    }
  }

  /** The blocking and the polling 8 B raw ping-pong, {@code calls} timed round trips each. */
  private static void pingPongs(int calls) throws Exception {
    BenchReport report = new BenchReport("probe");
    Measure.Plan plan = Measure.Plan.of(calls, Duration.ofMillis(250));
    String cpu;
    try (SocketCeiling socket = SocketCeiling.start()) {
      socket.measurePollPingPong(report, plan, 8, Progress.silent());
      // Again without warm-up, exactly CALLS round trips, for the CPU each thread spent on them.
      Map<String, Long> before = cpuByGroup();
      socket.measurePollPingPong(
          new BenchReport("probe"),
          new Measure.Plan(0, calls, Duration.ZERO, Duration.ofMillis(1)),
          8,
          Progress.silent());
      Map<String, Long> after = cpuByGroup();
      // The caller's only: the raw server's connection thread ends with its connection, before
      // a second look could read its CPU time.
      cpu =
          String.format(
              Locale.ROOT,
              "caller %.2f",
              (after.get("caller") - before.get("caller")) / 1e3 / calls);
      socket.measure(report, plan, new int[] {8}, 64 << 10, Progress.silent());
    }
    System.out.printf(
        Locale.ROOT,
        "raw ping-pong 8 B p50: polling %.1f us (CPU us per round trip: %s), blocking %.1f us%n",
        report.require(SocketCeiling.pingPongPoll(8) + ".p50").value() / 1e3,
        cpu,
        report.require(SocketCeiling.pingPong(8) + ".p50").value() / 1e3);
  }

  /**
   * CPU time (ns, {@link ThreadMXBean#getThreadCpuTime}) of this process's threads, summed by the
   * groups of {@link #switchesByGroup}.
   */
  private static Map<String, Long> cpuByGroup() {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Map<String, Long> out = new TreeMap<>();
    Thread me = Thread.currentThread();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      String n = t.getName();
      String group =
          n.startsWith("ferrite-tcp-server")
              ? "server-loops"
              : n.startsWith("ferrite-svc")
                  ? "dispatch"
                  : n.startsWith("ferrite-tcp-client") ? "client-loops" : t == me ? "caller" : null;
      long ns = group == null ? -1 : mx.getThreadCpuTime(t.getId());
      if (ns >= 0) {
        out.merge(group, ns, Long::sum);
      }
    }
    return out;
  }

  /** Voluntary context switches of this process's threads, summed by group. */
  private static Map<String, Long> switchesByGroup() throws IOException {
    Map<String, Long> out = new TreeMap<>();
    String caller = Path.of("/proc/thread-self").toRealPath().getFileName().toString();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
      for (Path t : tasks) {
        String comm;
        long vol = -1;
        try {
          comm = Files.readString(t.resolve("comm")).trim();
          for (String line : Files.readAllLines(t.resolve("status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
              vol = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
          }
        } catch (IOException e) {
          continue; // the thread ended
        }
        String group =
            comm.startsWith("ferrite-tcp-ser")
                ? "server-loops"
                : comm.startsWith("ferrite-svc")
                    ? "dispatch"
                    : comm.startsWith("ferrite-tcp-cli")
                        ? "client-loops"
                        : t.getFileName().toString().equals(caller) ? "caller" : null;
        if (group != null && vol >= 0) {
          out.merge(group, vol, Long::sum);
        }
      }
    }
    return out;
  }
}
