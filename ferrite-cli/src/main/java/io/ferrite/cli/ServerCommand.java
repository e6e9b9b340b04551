package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.proto.Sizes;
import io.ferrite.kernel.server.MemoryServer;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
    name = "server",
    mixinStandardHelpOptions = true,
    showDefaultValues = true,
    description = {
      "Runs one memory server: lends DRAM (files under /dev/shm) and disk as regions, serves them"
          + " over tcp and shm, registers with the master and heartbeats.",
      "Its id and disk regions live under <dir>/<name>; a restarted server keeps its id. It"
          + " reconnects to a restarted master by itself. Ctrl-C stops it cleanly and deletes its"
          + " dram region files.",
      "Needs the cluster secret of the master (--secret-file, default <dir>/secret)."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite server --master ferrite://master.example.net:7100 --name mem-1 \\",
      "      --dram 8g --disk 64g",
      "  ferrite server --name s2 --port 7102 --region-size 128m --heartbeat 250ms"
    })
final class ServerCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ConfigOptions config;

  @Mixin MetricsOptions metrics;

  @Option(
      names = "--master",
      description = "Master URI, ferrite://host:port (default: master.host and master.port).")
  String master;

  @Option(names = "--name", description = "Server name = its directory (default: server.name).")
  String name;

  @Option(
      names = "--host",
      description =
          "Address to bind and announce (default: server.host, 127.0.0.1); 0.0.0.0 binds every"
              + " interface and announces the address this host reaches the master from.")
  String host;

  @Option(names = "--port", description = "Tcp port (default: server.port, 0 = any free port).")
  Integer port;

  @Option(names = "--dir", description = "Data directory (default: data.dir, ~/.ferrite/data).")
  Path dir;

  @Option(names = "--dram", description = "DRAM capacity, e.g. 512m (default: capacity.dram).")
  String dram;

  @Option(names = "--disk", description = "Disk capacity, e.g. 4g (default: capacity.disk).")
  String disk;

  @Option(names = "--cluster-id", description = "Cluster id (default: cluster.id).")
  String clusterId;

  @Option(names = "--secret-file", description = "Cluster secret file (default: <dir>/secret).")
  Path secretFile;

  @Option(names = "--region-size", description = "Region size (default: region.size, 64m).")
  String regionSize;

  @Option(
      names = "--heartbeat",
      description = "Heartbeat interval (default: heartbeat.interval, 500ms).")
  String heartbeat;

  @Option(
      names = "--shm-dir",
      description = "Where dram region files live (default: shm.dir, /dev/shm).")
  Path shmDir;

  @Option(
      names = "--service-threads",
      description = "RPC threads for hosted services (default: service.threads, 4).")
  Integer serviceThreads;

  @Option(
      names = "--fabrics",
      description = "Fabrics to serve on (default: server.fabrics, tcp,shm).")
  String fabricNames;

  @Override
  public Integer call() throws Exception {
    Map<String, String> flags = new LinkedHashMap<>();
    ConfigOptions.put(flags, FerriteConfig.SERVER_NAME, name);
    ConfigOptions.put(flags, FerriteConfig.SERVER_HOST, host);
    ConfigOptions.put(flags, FerriteConfig.SERVER_PORT, port);
    ConfigOptions.put(flags, FerriteConfig.DATA_DIR, dir);
    ConfigOptions.put(flags, FerriteConfig.CAPACITY_DRAM, dram);
    ConfigOptions.put(flags, FerriteConfig.CAPACITY_DISK, disk);
    ConfigOptions.put(flags, FerriteConfig.CLUSTER_ID, clusterId);
    ConfigOptions.put(flags, FerriteConfig.SECRET_FILE, secretFile);
    ConfigOptions.put(flags, FerriteConfig.SERVER_FABRICS, fabricNames);
    ConfigOptions.put(flags, FerriteConfig.REGION_SIZE, regionSize);
    ConfigOptions.put(flags, FerriteConfig.HEARTBEAT_INTERVAL, heartbeat);
    ConfigOptions.put(flags, FerriteConfig.SHM_DIR, shmDir);
    ConfigOptions.put(flags, FerriteConfig.SERVICE_THREADS, serviceThreads);
    metrics.apply(flags);
    FerriteConfig cfg = config.load(flags);
    Path secret = MasterCommand.secretPath(cfg);
    if (!Files.exists(secret)) {
      throw new IllegalArgumentException(
          "no cluster secret at "
              + secret
              + ": pass --secret-file with the file the master created (its <dir>/secret)");
    }
    byte[] root = Secrets.read(secret);
    try {
      Secrets.writeClientSecret(secret, root);
    } catch (java.io.UncheckedIOException e) {
      // A root secret on a read-only mount: the server needs only the root; say what is missing.
      System.getLogger(ServerCommand.class.getName())
          .log(System.Logger.Level.WARNING, "no client.secret written: {0}", e.getMessage());
    }
    Credentials creds = new Credentials(cfg.clusterId(), root);
    // Every master of every group (docs/RESILIENCE.md, "Master groups"): the server registers with
    // each group and follows each group's leader.
    String masterAddress =
        master != null
            ? Ferrite.clusterAddress(master)
            : cfg.masterPeers().isEmpty()
                ? cfg.masterTcpAddress()
                : String.join(
                    ",",
                    cfg.masterPeers().stream().map(FerriteConfig.MasterPeer::tcpAddress).toList());
    List<String> names = cfg.serverFabrics();
    String scheme = masterAddress.substring(0, masterAddress.indexOf("://"));
    if (!names.contains(scheme)) {
      names = new java.util.ArrayList<>(names);
      names.add(scheme);
    }
    Fabrics fabrics = new Fabrics(cfg);
    MemoryServer server;
    try {
      server = MemoryServer.start(cfg, creds, fabrics.open(names), masterAddress, List.of());
    } catch (RuntimeException e) {
      fabrics.close();
      throw e;
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println(
        "memory server "
            + server.serverId()
            + " ("
            + server.name()
            + ") of cluster "
            + cfg.clusterId()
            + " serving at "
            + server.addresses().values());
    out.println(
        "  dram "
            + Sizes.format(cfg.capacity("dram"))
            + ", disk "
            + Sizes.format(cfg.capacity("disk"))
            + ", master "
            + masterAddress);
    if (server.ops() != null) {
      out.println("  metrics " + server.ops().url() + "metrics");
    }
    out.flush();
    MasterCommand.awaitShutdown(
        () -> {
          server.close();
          fabrics.close();
        });
    return 0;
  }
}
