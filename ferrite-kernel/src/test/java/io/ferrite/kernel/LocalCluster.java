package io.ferrite.kernel;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A master and memory servers in this JVM over the local fabric, with small regions and blocks and
 * short timeouts. Everything it starts is closed by {@link #close()}, in reverse order.
 */
public final class LocalCluster implements AutoCloseable {
  public static final Credentials CREDENTIALS =
      new Credentials(
          "kernel-test", "0123456789abcdef-kernel-secret".getBytes(StandardCharsets.UTF_8));

  public final LocalNetwork network = new LocalNetwork();
  public final Path dataDir;
  public final Path shmDir;
  public final FerriteConfig config;
  private final List<Fabric> fabrics = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();
  public Master master;
  public final List<MemoryServer> servers = new ArrayList<>();

  public LocalCluster(Path dataDir) throws IOException {
    this(dataDir, java.util.Map.of());
  }

  /** A cluster whose configuration has {@code overrides} on top of the test defaults. */
  public LocalCluster(Path dataDir, java.util.Map<String, String> overrides) throws IOException {
    this.dataDir = dataDir;
    this.shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-kernel-test-");
    this.config =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "kernel-test")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, shmDir.toString())
            .set(FerriteConfig.REGION_SIZE, "256k")
            .set(FerriteConfig.BLOCK_SIZE, "64k")
            .set(FerriteConfig.CAPACITY_DRAM, "512k")
            .set(FerriteConfig.CAPACITY_DISK, "256k")
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "50ms")
            .set(FerriteConfig.DEAD_TIMEOUT, "400ms")
            .set(FerriteConfig.SESSION_LEASE, "2s")
            .set(FerriteConfig.SERVICE_THREADS, "2")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.CLIENT_FABRIC, "local")
            .flags(overrides)
            .build();
  }

  public FabricFactory fabrics() {
    return name -> new LocalFabric(network);
  }

  private Fabric newFabric() {
    Fabric f = new LocalFabric(network);
    fabrics.add(f);
    return f;
  }

  public Master startMaster() {
    master = Master.start(config, CREDENTIALS, List.of(newFabric()));
    return master;
  }

  public String masterAddress() {
    return master.addresses().get("local");
  }

  public MemoryServer startServer(String name, FerriteService... services) {
    MemoryServer s =
        MemoryServer.start(
            config.with(FerriteConfig.SERVER_NAME, name),
            CREDENTIALS,
            List.of(newFabric()),
            this::masterAddress,
            List.of(services));
    servers.add(s);
    return s;
  }

  public FerriteClient client() {
    return client(ClientOptions.builder(CREDENTIALS));
  }

  public FerriteClient client(ClientOptions.Builder options) {
    FerriteClient c =
        Ferrite.connect(masterAddress(), options.fabric("local").fabrics(fabrics()).build());
    closeables.add(c);
    return c;
  }

  @Override
  public void close() throws IOException {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      try {
        closeables.get(i).close();
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
