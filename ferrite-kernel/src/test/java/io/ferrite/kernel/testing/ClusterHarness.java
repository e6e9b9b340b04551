package io.ferrite.kernel.testing;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A master and memory servers in this JVM, for the tests of the kernel and of every face: over the
 * local fabric (deterministic, with fault injection through {@link #network}), or, when {@code
 * real}, the master and the servers on tcp and shm (clients reach the master at its tcp address and
 * move to shm, as on any host they share with it). Small regions and blocks, short timeouts, no
 * fsync; {@code settings} override any of them. {@link #close()} stops everything it started, in
 * reverse order, and deletes its shm directory.
 */
public class ClusterHarness implements AutoCloseable {
  public final Credentials credentials;
  public final LocalNetwork network = new LocalNetwork();
  public final Path dataDir;
  public final Path shmDir;
  public final FerriteConfig config;
  public final boolean real;
  public final List<MemoryServer> servers = new ArrayList<>();
  public Master master;
  private final List<Fabric> fabrics = new ArrayList<>();
  private final List<AutoCloseable> clients = new ArrayList<>();
  private Fabric tcp;
  private Fabric shm;

  public ClusterHarness(
      Path dataDir, Credentials credentials, boolean real, Map<String, String> settings)
      throws IOException {
    this.credentials = credentials;
    this.dataDir = dataDir;
    this.real = real;
    this.shmDir =
        Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-" + credentials.clusterId() + "-");
    FerriteConfig.Builder b =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, credentials.clusterId())
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
            .set(FerriteConfig.CLIENT_FABRIC, real ? "auto" : "local");
    if (real) {
      b.set(FerriteConfig.MASTER_PORT, "0");
    }
    this.config = b.flags(settings).build();
    if (real) {
      tcp = FabricFactory.standard().open("tcp");
      shm = FabricFactory.standard().open("shm");
      fabrics.add(tcp);
      fabrics.add(shm);
    }
  }

  /** How clients of this cluster make their fabrics. */
  public FabricFactory fabrics() {
    return real ? FabricFactory.standard() : name -> new LocalFabric(network);
  }

  private Fabric newLocalFabric() {
    Fabric f = new LocalFabric(network);
    fabrics.add(f);
    return f;
  }

  /** (Re)starts the master with the extensions {@link java.util.ServiceLoader} finds. */
  /**
   * Runs {@code start} (a subclass constructor's master and servers); if it fails, closes what it
   * started and deletes the shm directory before the failure reaches the test, which never gets the
   * object to close (/dev/shm is left as found also then).
   */
  protected final void startOrClose(Runnable start) {
    try {
      start.run();
    } catch (RuntimeException | Error e) {
      try {
        close();
      } catch (IOException | RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  public Master startMaster() {
    return restartMaster(null);
  }

  /** (Re)starts the master with exactly {@code extensions}, over the same journal. */
  public Master startMaster(List<MasterExtension> extensions) {
    return restartMaster(extensions);
  }

  private Master restartMaster(List<MasterExtension> extensions) {
    if (master != null) {
      master.close();
    }
    // A real master serves shm too: clients on this host (all of them, here) reach it over shm.
    List<Fabric> on = real ? List.of(tcp, shm) : List.of(newLocalFabric());
    master = launchMaster(on, extensions);
    return master;
  }

  /**
   * Starts a master on {@code on} with {@code extensions} (null: those {@link
   * java.util.ServiceLoader} finds). Tests override it to start one with injected faults.
   */
  protected Master launchMaster(List<Fabric> on, List<MasterExtension> extensions) {
    return extensions == null
        ? Master.start(config, credentials, on)
        : Master.start(config, credentials, on, extensions);
  }

  /** A real cluster's fabrics, tcp and shm (what its master and servers serve on). */
  public List<Fabric> realFabrics() {
    if (!real) {
      throw new IllegalStateException("a local-fabric cluster has no tcp or shm fabric");
    }
    return List.of(tcp, shm);
  }

  public String masterAddress() {
    return master.addresses().get(real ? "tcp" : "local");
  }

  public MemoryServer startServer(String name, FerriteService... services) {
    return startServer(name, Map.of(), services);
  }

  /** Starts a memory server named {@code name} with {@code overrides} on top of the config. */
  public MemoryServer startServer(
      String name, Map<String, String> overrides, FerriteService... services) {
    FerriteConfig c = config.with(FerriteConfig.SERVER_NAME, name);
    for (Map.Entry<String, String> e : overrides.entrySet()) {
      c = c.with(e.getKey(), e.getValue());
    }
    MemoryServer s =
        MemoryServer.start(
            c,
            credentials,
            real ? List.of(tcp, shm) : List.of(newLocalFabric()),
            this::masterAddress,
            List.of(services));
    servers.add(s);
    return s;
  }

  /**
   * A client holding only the CLIENT secret ({@link Role}): what an application holds, so every
   * face's data path is tested with the least role. Use {@link #adminClient()} for the operator's
   * opcodes (dropping tables, moving shards, region keys).
   */
  public FerriteClient client() {
    return client(ClientOptions.builder(credentials.as(Role.CLIENT)));
  }

  /** A CLIENT-role client over {@code fabric}: local, or tcp or shm on a real cluster. */
  public FerriteClient client(String fabric) {
    return client(ClientOptions.builder(credentials.as(Role.CLIENT)).fabric(fabric));
  }

  /** A client holding the root secret (role ADMIN), as the CLI's admin commands do. */
  public FerriteClient adminClient() {
    return client(ClientOptions.builder(credentials));
  }

  /** An ADMIN client over {@code fabric}. */
  public FerriteClient adminClient(String fabric) {
    return client(ClientOptions.builder(credentials).fabric(fabric));
  }

  public FerriteClient client(ClientOptions.Builder options) {
    if (!real) {
      options.fabric("local").fabrics(fabrics());
    }
    FerriteClient c = Ferrite.connect(masterAddress(), options.build());
    clients.add(c);
    return c;
  }

  /** Closes {@code c} with the cluster (before the servers), e.g. a client made by hand. */
  public <T extends AutoCloseable> T closeLater(T c) {
    clients.add(c);
    return c;
  }

  /** Waits until the master sees {@code n} live servers. */
  public void awaitServers(int n) throws InterruptedException {
    for (int i = 0; i < 1000; i++) {
      long alive =
          master.state().members().stream().filter(m -> m.state() == ServerState.ALIVE).count();
      if (alive >= n) {
        return;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("fewer than " + n + " servers registered");
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
    FileTrees.delete(shmDir);
  }
}
