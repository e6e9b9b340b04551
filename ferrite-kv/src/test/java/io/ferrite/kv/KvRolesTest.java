package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Roles on the kv face (docs/SECURITY.md): a CLIENT uses tables but cannot drop shards, move them
 * or compact a server's log; the table is untouched by each refusal.
 */
class KvRolesTest {
  @TempDir Path dir;
  KvCluster cluster;
  FerriteClient client;
  KvTable table;

  @BeforeEach
  void start() throws Exception {
    cluster = new KvCluster(dir, 2);
    cluster.awaitServers(2);
    client = cluster.client();
    table =
        new KvClient(client)
            .createTable("roles", RegionFreeTest.options(TableOptions.Layout.PILAF, 2));
    for (int i = 0; i < 20; i++) {
      assertTrue(table.put(key(i), key(i)));
    }
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private static byte[] key(int i) {
    return ("k" + i).getBytes(StandardCharsets.UTF_8);
  }

  private void assertTableIntact() {
    KvTable fresh = new KvClient(cluster.client()).table("roles");
    for (int i = 0; i < 20; i++) {
      assertArrayEquals(key(i), fresh.get(key(i)), "key " + i);
    }
  }

  private static void assertDenied(String op, Runnable call) {
    FerriteException e = assertThrows(FerriteException.class, call::run, op);
    assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains(op), e.getMessage());
    assertTrue(e.getMessage().contains("needs role SERVER or ADMIN"), e.getMessage());
  }

  private ByteBuffer shardCall(int opcode, ByteBuffer body) {
    TableInfo t = table.info();
    return Futures.join(client.call(t.servers()[0], KvProtocol.SERVER_SERVICE, opcode, body));
  }

  @Test
  void aClientCannotDropMoveOrCompactShards() {
    long id = table.info().tableId();
    ByteBuffer shard0 = new Wire.Writer().i64(id).i32(0).toBuffer();
    assertDenied("DROP_SHARD", () -> shardCall(KvProtocol.DROP_SHARD, shard0.duplicate()));
    assertDenied(
        "FREEZE",
        () ->
            shardCall(
                KvProtocol.FREEZE, new Wire.Writer().i64(id).i32(0).i64(7).i64(1000).toBuffer()));
    assertDenied(
        "RETIRE",
        () ->
            shardCall(
                KvProtocol.RETIRE, new Wire.Writer().i64(id).i32(0).i64(7).i32(1).toBuffer()));
    assertDenied(
        "EXPORT",
        () ->
            shardCall(
                KvProtocol.EXPORT,
                new Wire.Writer().i64(id).i32(0).i64(0).i32(0).i32(4096).toBuffer()));
    assertDenied("SHARDS", () -> shardCall(KvProtocol.SHARDS, ByteBuffer.allocate(0)));
    assertDenied("COMPACT_LOG", () -> new KvClient(client).compactLog(table.info().servers()[0]));
    assertDenied("DROP_TABLE", () -> new KvClient(client).dropTable("roles"));
    // A client must not tell the directory a server lost its log: it would drop copies.
    assertDenied(
        "LOG_LOST",
        () ->
            Futures.join(
                client.callMaster(
                    KvProtocol.MASTER_SERVICE,
                    KvProtocol.LOG_LOST,
                    new Wire.Writer().i32(table.info().servers()[0]).i64(0).i32(0).toBuffer())));
    assertEquals(
        List.of("roles"), new KvClient(client).tables().stream().map(TableInfo::name).toList());
    assertTableIntact();
    // The operator (root secret) may.
    new KvClient(cluster.adminClient()).dropTable("roles");
    FerriteException gone =
        assertThrows(FerriteException.class, () -> new KvClient(client).table("roles"));
    assertEquals(ErrorCode.NOT_FOUND, gone.code());
  }
}
