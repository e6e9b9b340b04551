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
      "  ferrite local --dram 1g --disk 4g --port 7200",
      "  ferrite local --exit-after-check     # smoke test: exit status 0 if all passed",
      "  ferrite local --tls                  # TLS on tcp, self-signed pair in <dir>/tls"
    })
final class LocalCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ConfigOptions config;

  @Option(names = "--port", defaultValue = "7100", description = "Master tcp port.")
  int port;

  @Option(
      names = "--dir",
      defaultValue = "${sys:user.home}/.ferrite/local",
      description = "Data directory: secret, cluster file, journal, server ids, disk regions.")
  Path dir;

  @Option(names = "--servers", defaultValue = "2", description = "Number of memory servers.")
  int servers;

  @Option(names = "--dram", defaultValue = "256m", description = "DRAM capacity per server.")
  String dram;

  @Option(names = "--disk", defaultValue = "128m", description = "Disk capacity per server.")
  String disk;

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

  @Override
  public Integer call() throws Exception {
    Map<String, String> flags = new LinkedHashMap<>();
    flags.put(FerriteConfig.CLUSTER_ID, clusterId);
    flags.put(FerriteConfig.DATA_DIR, dir.toString());
    flags.put(FerriteConfig.MASTER_HOST, "127.0.0.1");
    flags.put(FerriteConfig.MASTER_PORT, Integer.toString(port));
    flags.put(FerriteConfig.SERVER_HOST, "127.0.0.1");
    flags.put(FerriteConfig.CAPACITY_DRAM, dram);
    flags.put(FerriteConfig.CAPACITY_DISK, disk);
    flags.put(FerriteConfig.SECRET_FILE, dir.resolve("secret").toString());
    Secrets.createPrivateDirectories(dir);
    Path tlsCert = null;
    if (tls) {
      tlsCert = TlsCommand.pairIn(dir.resolve("tls"), spec.commandLine().getOut());
      flags.put(FerriteConfig.TLS_ENABLED, "true");
      flags.put(FerriteConfig.TLS_CERT, tlsCert.toString());
      flags.put(FerriteConfig.TLS_KEY, tlsCert.resolveSibling(TlsFiles.KEY).toString());
      flags.put(FerriteConfig.TLS_TRUST, tlsCert.toString());
    }
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
      out.println("  master   " + uri + "  (" + master.addresses().values() + ")");
      for (MemoryServer s : started) {
        out.println("  server " + s.serverId() + " " + s.name() + "  " + s.addresses().values());
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
}
