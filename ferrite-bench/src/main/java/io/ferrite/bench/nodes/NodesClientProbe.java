package io.ferrite.bench.nodes;

import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Measure;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.OpKind;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.nodes.Nodes;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Locale;

/**
 * The single-thread nodes operations of {@link NodesMetadataBench} as a client application meets
 * them: run in a fresh JVM by the bench, it connects to the bench's cluster over tcp, times its
 * first operations and then the steady ones, and prints one {@code name value unit} line per figure
 * on stdout (the bench reads them back). The cluster secret comes in {@value #SECRET_ENV}.
 *
 * <pre>
 * java -cp ... io.ferrite.bench.nodes.NodesClientProbe MASTER_TCP CLUSTER_ID ROOT ITERATIONS MILLIS
 * </pre>
 */
public final class NodesClientProbe {
  /** Environment variable holding the cluster secret, hex. */
  public static final String SECRET_ENV = "FERRITE_PROBE_SECRET";

  private NodesClientProbe() {}

  public static void main(String[] args) throws Exception {
    String master = args[0];
    String clusterId = args[1];
    String root = args[2];
    int iterations = Integer.parseInt(args[3]);
    Duration duration = Duration.ofMillis(Long.parseLong(args[4]));
    Credentials creds =
        new Credentials(clusterId, HexFormat.of().parseHex(System.getenv(SECRET_ENV)));
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    long t0 = System.nanoTime();
    try (FerriteClient client =
        Ferrite.connect(master, ClientOptions.builder(creds).fabric("tcp").build())) {
      Nodes nodes = new Nodes(client);
      print(out, "connect.time", System.nanoTime() - t0, "ns");
      String dir = root + "/p" + ProcessHandle.current().pid();
      nodes.mkdir(dir);
      // First uses: no JIT, nothing cached, connections just opened.
      long t1 = System.nanoTime();
      nodes.create(dir + "/first").close();
      print(out, "file.create.close.first", System.nanoTime() - t1, "ns");
      t1 = System.nanoTime();
      nodes.lookup(dir + "/first");
      print(out, "lookup.first", System.nanoTime() - t1, "ns");
      Measure.Plan plan = Measure.Plan.of(iterations, duration);
      LatencyRecorder create = Measure.latency(plan, i -> nodes.create(dir + "/c" + i).close());
      print(out, "file.create.close.p50", create.value(LatencyRecorder.Statistic.P50), "ns");
      LatencyRecorder uncached = Measure.latency(plan, i -> nodes.lookupAtMaster(dir + "/first"));
      print(out, "lookup.uncached.p50", uncached.value(LatencyRecorder.Statistic.P50), "ns");
      double uncachedRate = NodesBench.rate(1, duration, () -> nodes.lookupAtMaster(dir + "/c1"));
      print(out, "lookup.uncached.threads.1", uncachedRate, NodesBench.OPS);
      var rpc = client.masterStub().connection().counters();
      long rpcs0 = rpc.ops(OpKind.RPC);
      long hits0 = nodes.cacheCounters().hits();
      double cachedRate = NodesBench.rate(1, duration, () -> nodes.lookup(dir + "/c1"));
      print(out, "lookup.cached.threads.1", cachedRate, NodesBench.OPS);
      print(out, "lookup.cached.rpcs", rpc.ops(OpKind.RPC) - rpcs0, "rpc");
      print(out, "lookup.cached.hits", nodes.cacheCounters().hits() - hits0, "hit");
      nodes.remove(dir, true);
    }
  }

  private static void print(PrintStream out, String name, double value, String unit) {
    out.printf(Locale.ROOT, "%s %.3f %s%n", name, value, unit);
  }
}
