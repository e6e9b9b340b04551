package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.tcp.TlsFiles;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Sizes;
import io.ferrite.kernel.server.MemoryServer;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
    name = "local",
    mixinStandardHelpOptions = true,
    showDefaultValues = true,
    description = {
      "Runs a whole cluster in this process on 127.0.0.1: a master and memory servers that serve"
          + " over tcp and shm.",
      "After start it runs a self-check: through each fabric it allocates a block on every"
          + " server, writes and reads it back and runs the atomics, and prints the results.",
      "It writes a cluster file to <dir>/cluster and to ~/.ferrite/cluster, so 'ferrite status'"
          + " (and other client commands) in another terminal find it with no flags.",
      "The cluster secret is <dir>/secret, created on first start (32 random bytes, mode 0600)."
          + " Ctrl-C stops everything cleanly; metadata stays journaled in <dir>/master."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite local",
      "  ferrite local --dram 1g --disk 4g --port 7200   # sizes of your choosing",
      "  ferrite local --exit-after-check     # smoke test: exit status 0 if all passed",
      "  ferrite local --masters 3            # a master group (Raft) on ports",
      "                                       # 7100-7102: clients follow its leader",
      "  ferrite local --tls                  # TLS on tcp, self-signed pair in",
      "                                       # <dir>/tls"
    })
final class LocalCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ConfigOptions config;

  @Mixin MetricsOptions metrics;

  @Option(names = "--port", defaultValue = "7100", description = "Master tcp port.")
  int port;

  @Option(
      names = "--groups",
      defaultValue = "1",
      description =
          "Master groups (default 1): the nodes namespace (by top-level name), the kv tables"
              + " and the memory namespaces are split between them by name (docs/RESILIENCE.md,"
              + " \"Master groups\"); group g's master listens on --port + g.")
  int groups;

  @Option(
      names = "--dir",
      defaultValue = "${sys:user.home}/.ferrite/local",
      description = "Data directory: secret, cluster file, journal, server ids, disk regions.")
  Path dir;

  @Option(names = "--servers", defaultValue = "2", description = "Number of memory servers.")
  int servers;

  @Option(
      names = "--masters",
      defaultValue = "1",
      description =
          "Number of masters: 1, or 3 (or 5) for a master group on Raft: master i serves"
              + " --port + i - 1 and talks Raft on --port + 100 + i - 1; the cluster file names"
              + " them all, and clients follow the leader.")
  int masters;

  @Option(
      names = "--dram",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description =
          "DRAM capacity per server (default: from the machine: 1/4 of physical memory shared by"
              + " the servers, within 3/4 of the free space of /dev/shm, where it is"
              + " preallocated; rounded down to the region size; printed at start).")
  Long dram;

  @Option(
      names = "--disk",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description =
          "Disk capacity per server (default: 1/4 of the dram, within 1/8 of the free space of"
              + " --dir).")
  Long disk;

  @Option(names = "--cluster-id", defaultValue = "local", description = "Cluster id.")
  String clusterId;

  @Option(
      names = "--exit-after-check",
      description = "Exit after the self-check: status 0 if every check passed, 1 otherwise.")
  boolean exitAfterCheck;

  @Option(
      names = "--tls",
      description =
          "TLS 1.3 on tcp: serve and connect with <dir>/tls/cert.pem and key.pem (a self-signed"
              + " pair for 127.0.0.1 and localhost, made on first use); the cluster file names"
              + " the certificate, so client commands trust it.")
  boolean tls;

  @Option(
      names = "--default-cluster-file",
      defaultValue = "${sys:user.home}/.ferrite/cluster",
      hidden = true,
      description = "Where client commands look for a cluster by default (tests move it).")
  Path defaultClusterFile;

  @Option(
      names = "--fabrics",
      defaultValue = "tcp,shm",
      split = ",",
      hidden = true,
      description = "Fabrics the servers serve (local = in-JVM, for tests).")
  List<String> fabricNames;

  /**
   * A capacity given with --set KEY=SIZE, the --config file or the environment (FERRITE_*): it wins
   * over the machine's sizing, as --dram does. From a file or the environment it is seen as a value
   * other than the key's default (a file that repeats the default is sized from the machine).
   */
  private Long explicit(FerriteConfig loaded, String key) {
    String v = loaded.get(key);
    boolean given = config.set.containsKey(key) || !v.equals(FerriteConfig.defaults().get(key));
    return given ? Sizes.parse(v) : null;
  }

  @Override
  public Integer call() throws Exception {
    Map<String, String> flags = new LinkedHashMap<>();
    flags.put(FerriteConfig.CLUSTER_ID, clusterId);
    flags.put(FerriteConfig.DATA_DIR, dir.toString());
    flags.put(FerriteConfig.MASTER_HOST, "127.0.0.1");
    flags.put(FerriteConfig.MASTER_PORT, Integer.toString(port));
    flags.put(FerriteConfig.SERVER_HOST, "127.0.0.1");
    flags.put(FerriteConfig.SECRET_FILE, dir.resolve("secret").toString());
    // Metrics on by default here: the master on 9100 or the next free port, servers on any.
    int metricsPort = metrics.port != null ? metrics.port : MetricsOptions.LOCAL_DEFAULT_PORT;
    if (metrics.port == null) {
      metricsPort =
          MetricsOptions.freePortFrom(
              metrics.host != null ? metrics.host : "127.0.0.1", metricsPort);
    }
    ConfigOptions.put(flags, FerriteConfig.METRICS_HOST, metrics.host);
    flags.put(FerriteConfig.METRICS_PORT, metricsPort < 0 ? "-1" : "0");
    Secrets.createPrivateDirectories(dir);
    Path tlsCert = null;
    if (tls) {
      tlsCert = TlsCommand.pairIn(dir.resolve("tls"), spec.commandLine().getOut());
      flags.put(FerriteConfig.TLS_ENABLED, "true");
      flags.put(FerriteConfig.TLS_CERT, tlsCert.toString());
      flags.put(FerriteConfig.TLS_KEY, tlsCert.resolveSibling(TlsFiles.KEY).toString());
      flags.put(FerriteConfig.TLS_TRUST, tlsCert.toString());
    }
    FerriteConfig unsized = config.load(flags);
    LocalSizing.Choice size =
        LocalSizing.choose(
            LocalSizing.Machine.probe(unsized.shmDir(), dir),
            servers,
            unsized.regionSize(),
            dram != null ? dram : explicit(unsized, FerriteConfig.CAPACITY_DRAM),
            disk != null ? disk : explicit(unsized, FerriteConfig.CAPACITY_DISK));
    flags.put(FerriteConfig.CAPACITY_DRAM, Long.toString(size.dram()));
    flags.put(FerriteConfig.CAPACITY_DISK, Long.toString(size.disk()));
    FerriteConfig cfg = config.load(flags);
    Path secret = dir.resolve("secret");
    byte[] root = Secrets.readOrCreate(secret);
    Secrets.writeClientSecret(secret, root);
    Credentials creds = new Credentials(cfg.clusterId(), root);
    PrintWriter out = spec.commandLine().getOut();

    Fabrics fabrics = new Fabrics(cfg);
    InProcessCluster cluster;
    try {
      // The master serves tcp and shm: same-host clients reach it through shared-memory rings.
      cluster =
          InProcessCluster.builder(cfg, creds)
              .fabrics(fabrics.factory(), fabricNames)
              .servers(servers)
              .groups(groups)
              .masters(masters)
              .masterSettings(Map.of(FerriteConfig.METRICS_PORT, Integer.toString(metricsPort)))
              .start();
    } catch (RuntimeException e) {
      fabrics.close();
      throw e;
    }
    Runnable stopAll =
        () -> {
          cluster.close();
          fabrics.close();
        };
    boolean passed;
    try {
      Master master = cluster.master();
      String uri = cluster.uri();
      List<Integer> ids = new ArrayList<>();
      List<MemoryServer> started = cluster.servers();
      for (MemoryServer s : started) {
        ids.add(s.serverId());
      }
      ClusterFile cf =
          cluster.writeClusterFile(dir.resolve(ClusterFile.FILE_NAME), secret, tlsCert);
      boolean reachable = !fabricNames.get(0).equals("local") || fabricNames.contains("tcp");
      if (reachable) {
        cf.write(defaultClusterFile);
      }

      out.println("ferrite local: cluster " + cfg.clusterId() + " in " + dir.toAbsolutePath());
      out.println("  sizing   " + size.why());
      if (masters > 1) {
        for (Master m : cluster.masters()) {
          out.println(
              "  master   " + m.addresses().values() + "  " + m.role() + ", term " + m.term());
        }
        out.println("  uri      " + uri);
      } else {
        out.println("  master   " + uri + "  (" + master.addresses().values() + ")");
      }
      for (int g = 1; g < cluster.groups(); g++) {
        out.println("  group " + g + "  " + cluster.master(g).addresses().values());
      }
      if (master.console() != null) {
        out.println("  console  " + master.ops().url());
      }
      for (MemoryServer s : started) {
        out.println("  server " + s.serverId() + " " + s.name() + "  " + s.addresses().values());
      }
      if (master.ops() != null) {
        out.println("  metrics  " + master.ops().url() + "metrics" + serverMetrics(started));
      }
      ClusterStatus st = master.state().status();
      for (Map.Entry<String, long[]> e : st.totals(ServerState.ALIVE).entrySet()) {
        out.printf(
            Locale.ROOT,
            "  %-5s %s in total (%s per server)%n",
            e.getKey(),
            Sizes.format(e.getValue()[0]),
            Sizes.format(e.getValue()[0] / Math.max(1, started.size())));
      }
      out.println("  secret   " + secret.toAbsolutePath() + " (root: servers and the operator)");
      out.println(
          "  client   "
              + secret.toAbsolutePath().resolveSibling(Secrets.CLIENT_FILE)
              + " (role CLIENT: give applications this one)");
      if (tlsCert != null) {
        out.println("  tls      " + tlsCert.toAbsolutePath() + " (TLS 1.3 on tcp)");
      }
      out.println(
          "  cluster file "
              + dir.resolve(ClusterFile.FILE_NAME).toAbsolutePath()
              + (reachable ? " and " + defaultClusterFile : ""));
      out.println("self-check:");
      out.flush();
      List<String> clientFabrics = new ArrayList<>();
      for (String f : List.of("shm", "tcp", "local")) {
        if (fabricNames.contains(f)) {
          clientFabrics.add(f);
        }
      }
      passed = SelfCheck.run(out, uri, creds, fabrics.factory(), clientFabrics, ids);
      out.println(passed ? "self-check passed" : "self-check FAILED");
      out.flush();
    } catch (RuntimeException e) {
      stopAll.run();
      throw e;
    }
    if (exitAfterCheck) {
      stopAll.run();
      return passed ? 0 : 1;
    }
    out.println("serving until Ctrl-C; in another terminal: ferrite status");
    out.flush();
    MasterCommand.awaitShutdown(stopAll);
    return 0;
  }

  /** The servers' metrics ports, for the banner: " (servers :41234 :41235)". */
  private static String serverMetrics(List<MemoryServer> started) {
    StringBuilder b = new StringBuilder();
    for (MemoryServer s : started) {
      if (s.ops() != null) {
        b.append(b.length() == 0 ? " (servers " : " ").append(':').append(s.ops().url().getPort());
      }
    }
    return b.length() == 0 ? "" : b.append(')').toString();
  }
}
