package io.ferrite.nodes;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.nodes.master.NodesMaster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A master with the nodes extension and memory servers in this JVM over the local fabric (the
 * pattern of the kernel's test {@code LocalCluster}), with 64 KiB blocks. Closes all it started.
 */
final class NodesCluster implements AutoCloseable {
  static final Credentials CREDENTIALS =
      new Credentials(
          "nodes-test", "0123456789abcdef-nodes-secret".getBytes(StandardCharsets.UTF_8));

  final LocalNetwork network = new LocalNetwork();
  final Path shmDir;
  final FerriteConfig config;
  private final List<Fabric> fabrics = new ArrayList<>();
  private final List<AutoCloseable> clients = new ArrayList<>();
  final List<MemoryServer> servers = new ArrayList<>();
  Master master;
  NodesMaster ext;

  NodesCluster(Path dataDir, Map<String, String> overrides) throws IOException {
    this.shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-nodes-test-");
    this.config =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "nodes-test")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, shmDir.toString())
            .set(FerriteConfig.REGION_SIZE, "256k")
            .set(FerriteConfig.BLOCK_SIZE, "64k")
            .set(FerriteConfig.CAPACITY_DRAM, "2m")
            .set(FerriteConfig.CAPACITY_DISK, "512k")
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "50ms")
            .set(FerriteConfig.DEAD_TIMEOUT, "400ms")
            .set(FerriteConfig.SESSION_LEASE, "1s")
            .set(FerriteConfig.SERVICE_THREADS, "2")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.CLIENT_FABRIC, "local")
            .flags(overrides)
            .build();
  }

  private Fabric newFabric() {
    Fabric f = new LocalFabric(network);
    fabrics.add(f);
    return f;
  }

  /** (Re)starts the master with a fresh nodes extension (grace 50 ms) over the same journal. */
  Master startMaster() {
    return startMaster(Duration.ofMillis(50));
  }

  /** (Re)starts the master with a nodes extension whose reclaim grace is {@code grace}. */
  Master startMaster(Duration grace) {
    if (master != null) {
      master.close();
    }
    ext = new NodesMaster(grace);
    master = Master.start(config, CREDENTIALS, List.of(newFabric()), List.of(ext));
    return master;
  }

  String masterAddress() {
    return master.addresses().get("local");
  }

  MemoryServer startServer(String name) {
    return startServer(name, Map.of());
  }

  MemoryServer startServer(String name, Map<String, String> overrides) {
    FerriteConfig c = config.with(FerriteConfig.SERVER_NAME, name);
    for (Map.Entry<String, String> e : overrides.entrySet()) {
      c = c.with(e.getKey(), e.getValue());
    }
    MemoryServer s =
        MemoryServer.start(c, CREDENTIALS, List.of(newFabric()), this::masterAddress, List.of());
    servers.add(s);
    return s;
  }

  FerriteClient client() {
    FerriteClient c =
        Ferrite.connect(
            masterAddress(),
            ClientOptions.builder(CREDENTIALS)
                .fabric("local")
                .fabrics(name -> new LocalFabric(network))
                .build());
    clients.add(c);
    return c;
  }

  Nodes nodes() {
    return new Nodes(client());
  }

  /** Waits until the master sees {@code n} alive servers. */
  void awaitServers(int n) throws InterruptedException {
    for (int i = 0; i < 200; i++) {
      long alive =
          master.state().members().stream().filter(m -> m.state().name().equals("ALIVE")).count();
      if (alive >= n) {
        return;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("servers did not register");
  }

  @Override
  public void close() throws IOException {
    for (int i = clients.size() - 1; i >= 0; i--) {
      try {
        clients.get(i).close();
      } catch (Exception e) {
        // Keep closing the rest.
      }
    }
    for (MemoryServer s : servers) {
      s.close();
    }
    if (master != null) {
      master.close();
    }
    for (Fabric f : fabrics) {
      f.close();
    }
    try (Stream<Path> s = Files.walk(shmDir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
