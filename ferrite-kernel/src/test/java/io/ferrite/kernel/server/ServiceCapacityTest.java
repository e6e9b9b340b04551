package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Service regions count against the server's capacity with its block pool: they take empty pool
 * regions' space, are refused with NO_SPACE (before a file is made) when blocks in use and other
 * service regions hold it, give it back to the pool when freed, and show in the status.
 *
 * <p>The test cluster: 64 KiB blocks, 256 KiB regions, capacity.dram 512 KiB (two pool regions).
 */
class ServiceCapacityTest {
  static final int K64 = 64 * 1024;

  @TempDir Path dir;
  LocalCluster cluster;
  final FillService fill = new FillService();
  MemoryServer server;
  FerriteClient client;

  /** Creates and frees regions when told (no RPC: the test calls its context directly). */
  static final class FillService implements FerriteService {
    volatile ServiceContext ctx;
    final List<MappedRegion> mine = new ArrayList<>();

    @Override
    public int id() {
      return 17;
    }

    @Override
    public String name() {
      return "fill";
    }

    @Override
    public void start(ServiceContext context) {
      ctx = context;
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
      return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "fill has no opcodes");
    }

    /** Creates 64 KiB regions until refused (at most 64: 4 MiB); returns the refusal. */
    FerriteException fillUp() {
      for (int i = 0; i < 64; i++) {
        try {
          mine.add(ctx.createRegion("dram", K64));
        } catch (FerriteException e) {
          return e;
        }
      }
      throw new AssertionError("64 regions of 64 KiB on a server of 512 KiB: never refused");
    }

    void freeAll() {
      mine.forEach(ctx::freeRegion);
      mine.clear();
    }
  }

  @BeforeEach
  void start() throws Exception {
    cluster = new LocalCluster(dir);
    cluster.startMaster();
    server = cluster.startServer("s1", fill);
    cluster.awaitServers(1);
    client = cluster.client();
  }

  @AfterEach
  void stop() throws IOException {
    cluster.close();
  }

  private long[] dram() {
    ClusterStatus.Member m = client.status().member(server.serverId());
    for (ClusterStatus.ClassUsage u : m.usage()) {
      if (u.storageClass().equals("dram")) {
        return new long[] {u.capacityBytes(), u.usedBytes()};
      }
    }
    throw new AssertionError("no dram in " + m);
  }

  private List<String> dramFiles() throws IOException {
    try (Stream<Path> s = Files.walk(cluster.shmDir)) {
      return s.map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith("region-"))
          .sorted()
          .toList();
    }
  }

  private long dramFileBytes() throws IOException {
    long n = 0;
    try (Stream<Path> s = Files.walk(cluster.shmDir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        if (p.getFileName().toString().startsWith("region-")) {
          n += Files.size(p);
        }
      }
    }
    return n;
  }

  @Test
  void aRegionLargerThanTheCapacityIsRefusedWithThePoolLeftWhole() throws Exception {
    List<String> files = dramFiles();
    FerriteException tooBig =
        assertThrows(FerriteException.class, () -> fill.ctx.createRegion("dram", 1024 * 1024));
    assertEquals(ErrorCode.NO_SPACE, tooBig.code(), tooBig.getMessage());
    // No pool region was retired for it (nothing could have made room): every block is there.
    // The same files: none retired (and regrown under new ids) for a region that could never fit.
    assertEquals(files, dramFiles(), "the block pool's regions");
    assertEquals(8, client.allocate(8, "dram", true, "").size(), "the pool's blocks");
  }

  @Test
  void serviceRegionsTakeThePoolsSpaceAndGiveItBack() throws Exception {
    assertEquals(512 * 1024, dram()[0]);
    assertEquals(0, dram()[1]);

    FerriteException full = fill.fillUp();
    assertEquals(ErrorCode.NO_SPACE, full.code(), full.getMessage());
    assertTrue(full.getMessage().contains("capacity.dram is 524288 B"), full.getMessage());
    assertEquals(8, fill.mine.size(), "the whole capacity, in 64 KiB regions");
    assertEquals(512 * 1024, dramFileBytes(), "no file beyond the capacity");
    assertEquals(512 * 1024, dram()[0]);
    assertEquals(512 * 1024, dram()[1], "the status counts service regions as used");
    FerriteException noBlocks =
        assertThrows(FerriteException.class, () -> client.allocate(1, "dram", true, ""));
    assertEquals(ErrorCode.NO_SPACE, noBlocks.code(), noBlocks.getMessage());

    fill.freeAll();
    assertEquals(0, dram()[1], "all space back");
    assertEquals(512 * 1024, dram()[0]);
    List<BlockRef> blocks = client.allocate(8, "dram", true, "");
    assertEquals(8, blocks.size(), "the pool grew back whole");
    // The regrown pool regions honour their blocks' keys: installed before the master heard of
    // them.
    for (int i = 0; i < blocks.size(); i++) {
      client.write(blocks.get(i), 0, ByteBuffer.wrap(new byte[] {(byte) (i + 1)})).join();
      ByteBuffer got = ByteBuffer.allocate(1);
      client.read(blocks.get(i), 0, got).join();
      assertEquals(i + 1, got.get(0), "block " + blocks.get(i));
    }
  }

  @Test
  void theStatusShowsServiceRegionsPerFace() throws Exception {
    client.allocate(1, "dram", true, "");
    for (int i = 0; i < 3; i++) {
      fill.mine.add(fill.ctx.createRegion("dram", K64));
    }
    assertEquals(Map.of("dram", Map.of("fill", 3L * K64)), server.serviceBytes(), "the server's");
    ClusterStatus st = client.status();
    ClusterStatus.ClassUsage dram =
        st.member(server.serverId()).usage().stream()
            .filter(u -> u.storageClass().equals("dram"))
            .findFirst()
            .orElseThrow();
    assertEquals(Map.of("fill", 3L * K64), dram.serviceBytes(), "the master's");
    assertEquals(K64, dram.blockBytes(), "one block in use");
    // (Capacity 448 KiB: one empty 256 KiB pool region was retired to make room for them.)
    assertTrue(
        st.format().contains("dram 256 KiB/448 KiB used: blocks 64 KiB, fill 192 KiB"),
        st.format());
    assertTrue(st.toJson().contains("\"services\":{\"fill\":196608}"), st.toJson());

    fill.freeAll();
    assertEquals(Map.of(), server.serviceBytes());
    String after = client.status().format();
    assertTrue(after.contains("dram 64 KiB/") && !after.contains("fill"), after);
  }

  @Test
  void poolRegionsWithBlocksInUseAreNotRetired() throws Exception {
    BlockRef b = client.allocate(1, "dram", true, "").get(0);
    client.write(b, 0, ByteBuffer.wrap(new byte[] {42})).join();

    FerriteException full = fill.fillUp();
    assertEquals(ErrorCode.NO_SPACE, full.code(), full.getMessage());
    assertEquals(4, fill.mine.size(), "only the empty pool region's 256 KiB");
    assertTrue(
        full.getMessage().contains("block-pool regions with blocks in use 262144 B"),
        full.getMessage());
    assertEquals(512 * 1024, dram()[0]);
    assertEquals(256 * 1024 + K64, dram()[1]);
    ByteBuffer got = ByteBuffer.allocate(1);
    client.read(b, 0, got).join();
    assertEquals(42, got.get(0), "the block in use kept its data");

    fill.freeAll();
    assertEquals(K64, dram()[1]);
    assertEquals(7, client.allocate(7, "dram", true, "").size());
  }
}
