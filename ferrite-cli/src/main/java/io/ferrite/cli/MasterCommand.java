package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.master.Master;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
    name = "master",
    mixinStandardHelpOptions = true,
    showDefaultValues = true,
    description = {
      "Runs the master: membership, region directory, block allocation, sessions, journal.",
      "Its metadata is journaled under <dir>/master/journal; a master restarted on the same"
          + " directory recovers it, and memory servers reconnect and register again by"
          + " themselves.",
      "The cluster secret is read from --secret-file (default <dir>/secret), created with 32"
          + " random bytes (mode 0600) if it does not exist. A cluster file for clients is written"
          + " to <dir>/cluster.",
      "",
      "A master group (no single point of failure): run one master per host with the same"
          + " --peers (every master as host:port:raftPort) and its own --id (its place in the"
          + " list, from 1). They elect a leader with Raft (Apache Ratis); the leader serves and"
          + " the followers answer NOT_LEADER naming it, so clients and memory servers given"
          + " every master (ferrite://h1:7100,h2:7100,h3:7100) follow it. A mutation is"
          + " acknowledged once a majority has it on disk; with 3 masters, one may fail. Every"
          + " master needs the same cluster secret: copy the first one's secret file."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite master --dir /var/lib/ferrite --port 7100",
      "  ferrite master --dead-timeout 5s --lease 30s --set journal.fsync=true",
      "  ferrite master --dir /var/lib/ferrite --repair-journal",
      "",
      "  # A group of 3: one per host, the same --peers and secret file on each",
      "  P=10.0.0.1:7100:7200,10.0.0.2:7100:7200,10.0.0.3:7100:7200",
      "  ferrite master --peers $P --id 1 --host 0.0.0.0     # on 10.0.0.1",
      "  ferrite master --peers $P --id 2 --host 0.0.0.0 \\",
      "      --secret-file /etc/ferrite/secret               # on 10.0.0.2, ...",
      "  ferrite server --master \\",
      "      ferrite://10.0.0.1:7100,10.0.0.2:7100,10.0.0.3:7100",
      "  (on one machine, for a try: ferrite local --masters 3)"
    })
final class MasterCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ConfigOptions config;

  @Mixin MetricsOptions metrics;

  @Option(names = "--host", description = "Address to bind (default: master.host, 127.0.0.1).")
  String host;

  @Option(names = "--port", description = "Tcp port to bind (default: master.port, 7100).")
  Integer port;

  @Option(names = "--dir", description = "Data directory (default: data.dir, ~/.ferrite/data).")
  Path dir;

  @Option(names = "--cluster-id", description = "Cluster id (default: cluster.id, ferrite).")
  String clusterId;

  @Option(names = "--secret-file", description = "Cluster secret file (default: <dir>/secret).")
  Path secretFile;

  @Option(names = "--block-size", description = "Block size handed out (default: 1m).")
  String blockSize;

  @Option(
      names = "--dead-timeout",
      description = "A server silent this long is DEAD (default: server.dead.timeout, 3s).")
  String deadTimeout;

  @Option(names = "--lease", description = "Default client session lease (default: 10s).")
  String lease;

  @Option(
      names = "--snapshot-every",
      description = "Journal records between snapshots (default: 10000).")
  Integer snapshotEvery;

  @Option(
      names = "--peers",
      description =
          "Run as one master of a Raft group: every master as host:port:raftPort,"
              + " comma-separated, the same list on each (master.peers). The port is the one"
              + " clients use, raftPort the one the masters talk Raft on.")
  String peers;

  @Option(
      names = "--id",
      description =
          "With --peers: this master's place in the list, from 1 (master.id). Its --port"
              + " defaults to the list's.")
  Integer id;

  @Option(
      names = "--repair-journal",
      description =
          "Before starting, cut the journal at a corrupt record (a bad record followed by valid"
              + " ones, which the master otherwise refuses to start on) and print what was"
              + " dropped. The records from the cut on are lost.")
  boolean repairJournal;

  @Option(
      names = {"--fabrics", "--fabric"},
      description =
          "Fabrics to serve on (default: tcp,shm; clients on this host move from tcp to shm).",
      defaultValue = "tcp,shm",
      split = ",",
      hidden = true)
  List<String> fabricNames;

  @Override
  public Integer call() throws Exception {
    Map<String, String> flags = new LinkedHashMap<>();
    ConfigOptions.put(flags, FerriteConfig.MASTER_HOST, host);
    ConfigOptions.put(flags, FerriteConfig.MASTER_PORT, port);
    ConfigOptions.put(flags, FerriteConfig.DATA_DIR, dir);
    ConfigOptions.put(flags, FerriteConfig.CLUSTER_ID, clusterId);
    ConfigOptions.put(flags, FerriteConfig.SECRET_FILE, secretFile);
    ConfigOptions.put(flags, FerriteConfig.BLOCK_SIZE, blockSize);
    ConfigOptions.put(flags, FerriteConfig.DEAD_TIMEOUT, deadTimeout);
    ConfigOptions.put(flags, FerriteConfig.SESSION_LEASE, lease);
    ConfigOptions.put(flags, FerriteConfig.SNAPSHOT_EVERY, snapshotEvery);
    ConfigOptions.put(flags, FerriteConfig.MASTER_PEERS, peers);
    ConfigOptions.put(flags, FerriteConfig.MASTER_ID, id);
    metrics.apply(flags);
    FerriteConfig cfg = config.load(flags);
    List<FerriteConfig.MasterPeer> group = cfg.masterPeers();
    if (!group.isEmpty()) {
      if (cfg.masterId() < 1 || cfg.masterId() > group.size()) {
        throw new picocli.CommandLine.ParameterException(
            spec.commandLine(),
            "--id "
                + cfg.masterId()
                + " (expected: this master's place in --peers, 1 to "
                + group.size()
                + ")");
      }
      FerriteConfig.MasterPeer me = group.get(cfg.masterId() - 1);
      if (port == null) {
        cfg = cfg.with(FerriteConfig.MASTER_PORT, String.valueOf(me.port()));
      }
      if (host == null) {
        cfg = cfg.with(FerriteConfig.MASTER_HOST, me.host());
      }
    }
    Path secret = secretPath(cfg);
    byte[] root = Secrets.readOrCreate(secret);
    Secrets.writeClientSecret(secret, root);
    Credentials creds = new Credentials(cfg.clusterId(), root);
    PrintWriter out = spec.commandLine().getOut();
    if (repairJournal) {
      List<String> cut = Master.repairJournal(cfg);
      out.println(cut.isEmpty() ? "journal: nothing to repair" : "journal repaired:");
      cut.forEach(line -> out.println("  " + line));
      out.flush();
    }
    Fabrics fabrics = new Fabrics(cfg);
    Master master;
    try {
      master = Master.start(cfg, creds, fabrics.open(fabricNames));
    } catch (RuntimeException e) {
      fabrics.close();
      throw e;
    }
    String uri = "ferrite://" + cfg.masterHost() + ":" + cfg.masterPort();
    if (!group.isEmpty()) {
      List<String> hosts = new java.util.ArrayList<>();
      for (FerriteConfig.MasterPeer p : group) {
        hosts.add(p.host() + ":" + p.port());
      }
      uri = "ferrite://" + String.join(",", hosts);
    }
    new ClusterFile(uri, cfg.clusterId(), secret)
        .write(cfg.dataDir().resolve(ClusterFile.FILE_NAME));
    out.println(
        "master of cluster " + cfg.clusterId() + " listening at " + master.addresses().values());
    out.println(
        group.isEmpty()
            ? "  journal recovered: " + master.recoverySummary()
            : "  "
                + master.recoverySummary()
                + " (Raft port "
                + group.get(cfg.masterId() - 1).raftPort()
                + ")");
    if (master.ops() != null) {
      out.println("  metrics:      " + master.ops().url() + "metrics");
    }
    out.println("  secret file:  " + secret.toAbsolutePath());
    out.println("  cluster file: " + cfg.dataDir().resolve(ClusterFile.FILE_NAME).toAbsolutePath());
    out.flush();
    awaitShutdown(
        () -> {
          master.close();
          fabrics.close();
        });
    return 0;
  }

  static Path secretPath(FerriteConfig cfg) {
    String s = cfg.get(FerriteConfig.SECRET_FILE);
    return s.isEmpty() ? cfg.dataDir().resolve("secret") : Path.of(s);
  }

  /** Blocks until the JVM is asked to stop (Ctrl-C, SIGTERM), then runs {@code stop} once. */
  static void awaitShutdown(Runnable stop) throws InterruptedException {
    CountDownLatch done = new CountDownLatch(1);
    Thread hook =
        new Thread(
            () -> {
              try {
                stop.run();
              } finally {
                done.countDown();
              }
            },
            "ferrite-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    done.await();
  }
}
