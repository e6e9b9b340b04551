package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.ServerLoad;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A memory server's heartbeats carry its load; a master older than that block refuses it with
 * INVALID_ARGUMENT (trailing bytes), and the server then sends plain heartbeats: it stays alive
 * instead of registering again and again.
 */
class MasterLinkLoadTest {
  @TempDir Path dir;

  @Test
  void anOlderMasterGetsPlainHeartbeatsAfterRefusingTheLoad() throws Exception {
    AtomicInteger withLoad = new AtomicInteger();
    AtomicInteger plain = new AtomicInteger();
    AtomicInteger registers = new AtomicInteger();
    LocalNetwork network = new LocalNetwork();
    try (LocalFabric fabric = new LocalFabric(network)) {
      // The master of before #17: HEARTBEAT is serverId i32 and nothing else.
      FabricServer oldMaster =
          fabric.serve(
              new ServerSpec(
                  0,
                  LocalCluster.CREDENTIALS,
                  new RegionTable(),
                  (ctx, service, opcode, request) -> {
                    if (opcode != MasterProtocol.HEARTBEAT) {
                      return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "opcode " + opcode);
                    }
                    Wire.Reader r = new Wire.Reader(request, "heartbeat");
                    r.i32("serverId");
                    if (r.remaining() > 0) {
                      withLoad.incrementAndGet();
                      return Futures.failed(
                          ErrorCode.INVALID_ARGUMENT, r.remaining() + " unexpected trailing bytes");
                    }
                    plain.incrementAndGet();
                    return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
                  },
                  "127.0.0.1",
                  0,
                  dir,
                  1,
                  64,
                  ServerSpec.DEFAULT_MAX_FRAME));
      try (MasterLink link =
          new MasterLink(
              fabric,
              oldMaster::address,
              new ConnectOptions(
                  LocalCluster.CREDENTIALS.as(Role.SERVER),
                  Duration.ofSeconds(2),
                  Duration.ofSeconds(2)),
              Duration.ofSeconds(2),
              Duration.ofMillis(10),
              stub -> {
                registers.incrementAndGet();
                return 7;
              },
              id -> {})) {
        link.serverId(7);
        link.load(() -> ServerLoad.of(List.of(), 0, 0, -1, -1));
        link.callWithRetry(stub -> stub);
        link.start("test-master-link");
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (plain.get() < 5) {
          if (System.nanoTime() > deadline) {
            throw new AssertionError(
                "no plain heartbeats: " + withLoad + " with load, " + registers + " registers");
          }
          Thread.sleep(10);
        }
      } finally {
        oldMaster.close();
      }
    }
    assertEquals(1, withLoad.get(), "the load is offered once");
    assertEquals(0, registers.get(), "the server never registered again");
  }
}
