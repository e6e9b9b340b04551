package io.ferrite.kernel.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.ServerState;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InProcessClusterTest {
  @TempDir Path dir;
  private Path shm;
  private FerriteConfig cfg;
  private final LocalNetwork network = new LocalNetwork();
  private final List<Recording> opened = new ArrayList<>();

  @BeforeEach
  void config() throws Exception {
    shm = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-ipc-");
    cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, LocalCluster.CREDENTIALS.clusterId())
            .set(FerriteConfig.DATA_DIR, dir.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.REGION_SIZE, "256k")
            .set(FerriteConfig.BLOCK_SIZE, "64k")
            .set(FerriteConfig.CAPACITY_DRAM, "512k")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
  }

  @AfterEach
  void removeShm() throws Exception {
    FileTrees.delete(shm);
  }

  private FabricFactory recording() {
    return name -> {
      Recording r = new Recording(new LocalFabric(network));
      opened.add(r);
      return r;
    };
  }

  private InProcessCluster.Builder builder() {
    return InProcessCluster.builder(cfg, LocalCluster.CREDENTIALS)
        .fabrics(recording(), List.of("local"))
        .extensions(List.of());
  }

  @Test
  void startsMasterAndServersAndClosesThemOnceInOrder() throws Exception {
    InProcessCluster c = builder().servers(2).start();
    assertEquals(2, c.servers().size());
    assertEquals("server-1", c.servers().get(0).name());
    assertEquals("server-2", c.servers().get(1).name());
    assertNotEquals(c.servers().get(0).serverId(), c.servers().get(1).serverId());
    long alive =
        c.master().state().members().stream().filter(m -> m.state() == ServerState.ALIVE).count();
    assertEquals(2, alive);
    assertEquals(c.master().addresses().get("local"), c.masterAddress());
    assertEquals(c.masterAddress(), c.uri(), "not tcp: the uri is the address");
    Path file = dir.resolve("cluster");
    c.writeClusterFile(file, dir.resolve("secret"), null);
    assertEquals(c.uri(), ClusterFile.read(file).uri());

    assertEquals(1, opened.size(), "one fabric of each name, shared by master and servers");
    c.close();
    assertEquals(1, opened.get(0).closes.get());
    c.close();
    assertEquals(1, opened.get(0).closes.get(), "the second close does nothing");
    // The master's endpoint is gone and the servers' directory locks are free: the same cluster
    // starts again on the same data directory.
    try (InProcessCluster again = builder().servers(2).start()) {
      assertEquals(2, again.servers().size());
    }
  }

  @Test
  void aFailedStartStopsWhatItStarted() throws Exception {
    AtomicInteger stops = new AtomicInteger();
    // Two servers of one name: the second finds the first's directory locked and fails.
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                builder()
                    .servers(2)
                    .serverNames(i -> "same")
                    .extensions(List.of(new Stopping(stops)))
                    .start());
    assertTrue(e.getMessage().contains("same"), e.getMessage());
    assertEquals(1, stops.get(), "the master was stopped");
    assertEquals(1, opened.get(0).closes.get(), "the fabric was closed");
    try (InProcessCluster again = builder().servers(1).serverNames(i -> "same").start()) {
      assertEquals("same", again.servers().get(0).name(), "the first server let go of its lock");
    }
  }

  @Test
  void givenFabricsAreLeftOpenAndMissingOnesAreNamed() {
    Recording given = new Recording(new LocalFabric(network));
    try (InProcessCluster c =
        InProcessCluster.builder(cfg, LocalCluster.CREDENTIALS)
            .fabrics(List.of(given))
            .extensions(List.of())
            .servers(0)
            .start()) {
      assertEquals(given, c.fabric("local"));
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> c.fabric("tcp"));
      assertTrue(e.getMessage().contains("[local]"), e.getMessage());
    }
    assertEquals(0, given.closes.get(), "the caller's fabric");
    given.close();
  }

  /** Counts closes; delegates the rest. */
  private static final class Recording implements Fabric {
    final Fabric inner;
    final AtomicInteger closes = new AtomicInteger();

    Recording(Fabric inner) {
      this.inner = inner;
    }

    @Override
    public String name() {
      return inner.name();
    }

    @Override
    public FabricServer serve(ServerSpec spec) {
      return inner.serve(spec);
    }

    @Override
    public FabricConnection connect(String address, ConnectOptions options) {
      return inner.connect(address, options);
    }

    @Override
    public void close() {
      closes.incrementAndGet();
      inner.close();
    }
  }

  /** A master extension that counts its stops. */
  private static final class Stopping implements MasterExtension {
    final AtomicInteger stops;

    Stopping(AtomicInteger stops) {
      this.stops = stops;
    }

    @Override
    public int serviceId() {
      return 0x7E57;
    }

    @Override
    public String name() {
      return "stopping";
    }

    @Override
    public void apply(ByteBuffer record) {}

    @Override
    public List<byte[]> snapshot() {
      return List.of();
    }

    @Override
    public void start(MasterContext context) {}

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
      return CompletableFuture.failedFuture(new UnsupportedOperationException());
    }

    @Override
    public void stop() {
      stops.incrementAndGet();
    }
  }
}
