package io.ferrite.kv;

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
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A master and memory servers in this JVM over the local fabric (the pattern of the kernel's test
 * {@code LocalCluster}); the kv service and directory are found by {@link java.util.ServiceLoader}.
 * Everything it starts is closed by {@link #close()}.
 */
final class KvCluster implements AutoCloseable {
  static final Credentials CREDENTIALS =
      new Credentials(
          "kv-test", "0123456789abcdef-kv-test-secret".getBytes(StandardCharsets.UTF_8));

  final LocalNetwork network = new LocalNetwork();
  final Path shmDir;
  final FerriteConfig config;
  private final List<Fabric> fabrics = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();
  Master master;
  final List<MemoryServer> servers = new ArrayList<>();

  KvCluster(Path dataDir, int serverCount) throws IOException {
    this.shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-kv-test-");
    this.config =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "kv-test")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, shmDir.toString())
            .set(FerriteConfig.REGION_SIZE, "256k")
            .set(FerriteConfig.BLOCK_SIZE, "64k")
            .set(FerriteConfig.CAPACITY_DRAM, "256k")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "50ms")
            .set(FerriteConfig.DEAD_TIMEOUT, "2s")
            .set(FerriteConfig.SESSION_LEASE, "5s")
            .set(FerriteConfig.SERVICE_THREADS, "2")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.CLIENT_FABRIC, "local")
            .build();
    master = Master.start(config, CREDENTIALS, List.of(newFabric()));
    for (int i = 0; i < serverCount; i++) {
      startServer("kv" + i);
    }
  }

  private Fabric newFabric() {
    Fabric f = new LocalFabric(network);
    fabrics.add(f);
    return f;
  }

  String masterAddress() {
    return master.addresses().get("local");
  }

  MemoryServer startServer(String name) {
    MemoryServer s =
        MemoryServer.start(
            config.with(FerriteConfig.SERVER_NAME, name),
            CREDENTIALS,
            List.of(newFabric()),
            this::masterAddress,
            List.of());
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
    master.close();
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
