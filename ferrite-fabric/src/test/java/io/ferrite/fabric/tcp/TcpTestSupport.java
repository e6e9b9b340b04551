package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.verify.Checksum64;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Shared fixture of the tcp fabric's own tests: one server over a region of seeded random bytes,
 * everything closed after each test even when it fails, and Netty buffer leaks failing the test.
 */
@ExtendWith(NettyLeakExtension.class)
abstract class TcpTestSupport {
  static final int REGION = 1;
  static final int REGION_BYTES = 1 << 20;

  final long seed = Long.getLong("tests.seed", System.nanoTime());
  final Random random = new Random(seed);
  final Credentials credentials =
      new Credentials("tcp-test", "tcp-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));

  Fabric fabric;
  Path dir;
  RegionTable regions;
  MappedRegion region;
  RegionRef ref;
  FabricServer server;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  String where() {
    return "seed " + seed + " (replay with -Dtests.seed=" + seed + ")";
  }

  Fabric newFabric() {
    return new TcpFabric(2, Duration.ofMillis(500));
  }

  void start(RpcHandler rpc, int serviceThreads, int serviceQueue) throws IOException {
    dir = Files.createTempDirectory("ferrite-tcp-test-");
    regions = new RegionTable();
    region = MappedRegion.create(dir.resolve("r1"), REGION, REGION_BYTES, random.nextLong());
    byte[] fill = new byte[REGION_BYTES];
    random.nextBytes(fill);
    region.writeFrom(0, ByteBuffer.wrap(fill));
    regions.register(region);
    fabric = newFabric();
    server =
        fabric.serve(
            new ServerSpec(
                3,
                credentials,
                regions,
                rpc,
                "127.0.0.1",
                0,
                dir,
                serviceThreads,
                serviceQueue,
                ServerSpec.DEFAULT_MAX_FRAME));
    ref = regions.ref(3, REGION);
  }

  FabricConnection connect() {
    return closeLater(fabric.connect(server.address(), ConnectOptions.of(credentials)));
  }

  RawClient raw() throws IOException {
    return closeLater(new RawClient(RawClient.addressOf(server.address())));
  }

  <T extends AutoCloseable> T closeLater(T c) {
    toClose.add(c);
    return c;
  }

  long regionChecksum() {
    ByteBuffer all = ByteBuffer.allocateDirect(REGION_BYTES);
    region.readInto(0, all);
    return Checksum64.of(all, 0, REGION_BYTES);
  }

  /** A fresh, well-behaved client can still write and read back. */
  void assertStillServes() {
    try (FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(credentials))) {
      byte[] data = new byte[100];
      random.nextBytes(data);
      long before = region.getLongAcquire(REGION_BYTES - 8);
      c.writeSync(ref, 4096, ByteBuffer.wrap(data));
      ByteBuffer back = ByteBuffer.allocate(100);
      c.readSync(ref, 4096, back);
      assertArrayEquals(data, back.array(), where());
      assertEquals(before, c.fetchAndAddSync(ref, REGION_BYTES - 8, 0), where());
    }
  }

  static void await(BooleanSupplier condition, String what) {
    long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out waiting until " + what);
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting until " + what, e);
      }
    }
  }

  void awaitConnections(int n) {
    await(
        () -> server.connections() == n,
        "server.connections() == " + n + " (is " + server.connections() + ")");
  }

  /** Closes every client made so far. */
  void closeClients() throws Exception {
    Exception first = null;
    for (int i = toClose.size() - 1; i >= 0; i--) {
      try {
        toClose.get(i).close();
      } catch (Exception e) {
        first = first == null ? e : first;
      }
    }
    toClose.clear();
    if (first != null) {
      throw first;
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    Exception first = null;
    try {
      closeClients();
    } catch (Exception e) {
      first = e;
    }
    if (server != null) {
      server.close();
    }
    if (fabric != null) {
      fabric.close();
    }
    if (regions != null) {
      for (MappedRegion r : regions.all()) {
        r.close();
      }
    }
    if (dir != null) {
      FileTrees.delete(dir);
    }
    if (first != null) {
      throw first;
    }
  }
}
