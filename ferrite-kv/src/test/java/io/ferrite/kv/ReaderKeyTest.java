package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A kv reader holds the table's regions' read keys: it reads them one-sided and cannot write them
 * (every write is the shard server's), over tcp and over shm, where it maps the files itself.
 */
class ReaderKeyTest {
  @TempDir Path dir;
  @AutoClose ClusterHarness cluster;

  private static void assertDenied(CompletableFuture<?> f, String what) {
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(f), what);
    assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), what + ": " + e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "shm"})
  void aReadersKeyCannotWriteTheTable(String fabric) throws Exception {
    cluster =
        new ClusterHarness(
            dir,
            KvCluster.CREDENTIALS,
            true,
            Map.of(FerriteConfig.CAPACITY_DRAM, "64m", FerriteConfig.CAPACITY_DISK, "0"));
    cluster.startMaster();
    cluster.startServer("kv0");
    cluster.awaitServers(1);
    FerriteClient client = cluster.client(fabric);
    KvTable t =
        new KvClient(client)
            .createTable("t", TableOptions.DEFAULTS.withShards(1).withSlotsPerShard(256));
    byte[] value = "v".repeat(300).getBytes(StandardCharsets.UTF_8);
    t.put("k".getBytes(StandardCharsets.UTF_8), value);
    assertArrayEquals(value, t.get("k".getBytes(StandardCharsets.UTF_8)));

    ShardLayout l = t.layout(0);
    FabricConnection c = client.connection(l.entries().serverId());
    int n = (int) Math.min(4096, l.entries().length());
    ByteBuffer before = ByteBuffer.allocate(n);
    c.readSync(l.entries(), 0, before);
    assertDenied(c.write(l.entries(), 0, ByteBuffer.allocate(8)), fabric + " write");
    assertDenied(c.compareAndSwap(l.entries(), 0, 0, 1), fabric + " CAS");
    assertDenied(c.fetchAndAdd(l.entries(), 0, 1), fabric + " FAA");
    for (RegionRef ext : l.extents()) {
      assertDenied(c.write(ext, 0, ByteBuffer.allocate(8)), fabric + " extent write");
    }
    ByteBuffer after = ByteBuffer.allocate(n);
    c.readSync(l.entries(), 0, after);
    assertArrayEquals(before.array(), after.array(), fabric + ": the table changed");
    assertArrayEquals(value, t.get("k".getBytes(StandardCharsets.UTF_8)));
  }
}
