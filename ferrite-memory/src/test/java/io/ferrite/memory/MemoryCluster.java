package io.ferrite.memory;

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
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.memory.master.MemoryMaster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A master with the memory face and {@code n} memory servers in this JVM over the local fabric (the
 * kernel's {@code LocalCluster} pattern): 64 KiB blocks, 1 MiB regions, 4 MiB of dram per server.
 * {@link #close()} stops everything it started.
 */
final class MemoryCluster implements AutoCloseable {
  static final Credentials CREDENTIALS =
      new Credentials(
          "memory-test", "0123456789abcdef-memory-secret".getBytes(StandardCharsets.UTF_8));
  static final int BLOCK = 64 << 10;

  final LocalNetwork network = new LocalNetwork();
  final Path shmDir;
  final FerriteConfig config;
  final List<Fabric> fabrics = new ArrayList<>();
  final List<AutoCloseable> clients = new ArrayList<>();
  final List<MemoryServer> servers = new ArrayList<>();
  Master master;

  MemoryCluster(Path dataDir, int servers) throws IOException {
    this(dataDir, servers, false);
  }

  /**
   * {@code real}: the master on tcp, servers on tcp and shm (clients pick with {@link #client}).
   */
  final boolean real;

  MemoryCluster(Path dataDir, int servers, boolean real) throws IOException {
    this(dataDir, servers, real, new MemoryMaster());
  }

  MemoryCluster(Path dataDir, int servers, boolean real, MemoryMaster ext) throws IOException {
    this.real = real;
    this.shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-memory-test-");
    this.config =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "memory-test")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, shmDir.toString())
            .set(FerriteConfig.REGION_SIZE, "1m")
            .set(FerriteConfig.BLOCK_SIZE, "64k")
            .set(FerriteConfig.CAPACITY_DRAM, "4m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "50ms")
            .set(FerriteConfig.DEAD_TIMEOUT, "400ms")
            .set(FerriteConfig.SESSION_LEASE, "2s")
            .set(FerriteConfig.SERVICE_THREADS, "2")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.CLIENT_FABRIC, real ? "auto" : "local")
            .build();
    if (real) {
      tcp = FabricFactory.standard().open("tcp");
      shm = FabricFactory.standard().open("shm");
      fabrics.add(tcp);
      fabrics.add(shm);
    }
    startMaster(ext);
    for (int i = 0; i < servers; i++) {
      MemoryServer s =
          MemoryServer.start(
              config.with(FerriteConfig.SERVER_NAME, "s" + i),
              CREDENTIALS,
              real ? List.of(tcp, shm) : List.of(newFabric()),
              this::masterAddress,
              List.of());
      this.servers.add(s);
    }
  }

  private Fabric tcp;
  private Fabric shm;

  String masterAddress() {
    return master.addresses().get(real ? "tcp" : "local");
  }

  Master startMaster(MemoryMaster ext) {
    if (master != null) {
      master.close();
    }
    master = Master.start(config, CREDENTIALS, List.of(real ? tcp : newFabric()), List.of(ext));
    return master;
  }

  private Fabric newFabric() {
    Fabric f = new LocalFabric(network);
    fabrics.add(f);
    return f;
  }

  FerriteClient client() {
    return client(ClientOptions.builder(CREDENTIALS));
  }

  /**
   * A client over {@code fabric} ({@code local}; or {@code tcp}, {@code shm} on a real cluster).
   */
  FerriteClient client(String fabric) {
    return client(ClientOptions.builder(CREDENTIALS).fabric(fabric));
  }

  FerriteClient client(ClientOptions.Builder options) {
    if (!real) {
      options.fabric("local").fabrics(name -> new LocalFabric(network));
    }
    FerriteClient c = Ferrite.connect(masterAddress(), options.build());
    clients.add(c);
    return c;
  }

  RStore store() {
    return new RStore(client());
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
