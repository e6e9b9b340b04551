package io.ferrite.bench.fabric;

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
 * no report.
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.fabric.TcpWakeProbe 20000 0 50000
 * </pre>
 *
 * Arguments: {@code CALLS SPIN_NANOS...}.
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
            fabric.serve(ServerSpec.loopback(1, credentials, table, BenchEndpoint.handler(), dir));
        FabricConnection conn = fabric.connect(server.address(), ConnectOptions.of(credentials))) {
      ByteBuffer empty = ByteBuffer.allocate(0);
      Duration deadline = Duration.ofSeconds(10);
      for (int op : new int[] {BenchEndpoint.OP_INLINE, BenchEndpoint.OP_EMPTY}) {
        for (int i = 0; i < calls; i++) { // warm-up
          conn.callSync(BenchEndpoint.SERVICE, op, empty, deadline);
        }
        Map<String, Long> before = switchesByGroup();
        long[] lat = new long[calls];
        for (int i = 0; i < calls; i++) {
          long t0 = System.nanoTime();
          conn.callSync(BenchEndpoint.SERVICE, op, empty, deadline);
          lat[i] = System.nanoTime() - t0;
        }
        Map<String, Long> after = switchesByGroup();
        Arrays.sort(lat);
        StringBuilder sw = new StringBuilder();
        for (Map.Entry<String, Long> e : after.entrySet()) {
          double per = (e.getValue() - before.getOrDefault(e.getKey(), 0L)) / (double) calls;
          sw.append(String.format(Locale.ROOT, " %s %.2f", e.getKey(), per));
        }
        System.out.printf(
            Locale.ROOT,
            "spin %d ns, %s: p50 %.1f us, p99 %.1f us | voluntary switches per call:%s%n",
            spin,
            op == BenchEndpoint.OP_INLINE ? "inline" : "dispatch thread",
            lat[calls / 2] / 1e3,
            lat[calls * 99 / 100] / 1e3,
            sw);
      }
    } finally {
      region.closeAndDelete();
      Files.deleteIfExists(dir.resolve("region"));
      Files.deleteIfExists(dir);
    }
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
