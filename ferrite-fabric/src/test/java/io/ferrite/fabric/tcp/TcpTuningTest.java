package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.netty.NettyConnection;
import java.nio.ByteBuffer;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The tcp fabric's switches ({@link FabricTuning}) reach its connections. */
class TcpTuningTest extends TcpTestSupport {
  private FabricTuning tuning = FabricTuning.DEFAULTS;

  @Override
  Fabric newFabric() {
    return new TcpFabric(2, Duration.ofMillis(500), null, tuning);
  }

  private int lanesAfterReads(FabricConnection c) {
    ByteBuffer b = ByteBuffer.allocate(64);
    for (int i = 0; i < 50; i++) {
      b.clear();
      c.readSync(ref, 64L * i, b);
    }
    return ((NettyConnection) c).lanes();
  }

  @Test
  void defaultsHaveLanesAndDirectWrites() throws Exception {
    start((ctx, svc, op, req) -> null, 1, 16);
    NettyConnection c = (NettyConnection) connect();
    assertTrue(c.hasLanes(), where());
    assertTrue(c.directWrites(), where());
    assertTrue(lanesAfterReads(c) > 0, "a synchronous read took a lane; " + where());
  }

  @Test
  void zeroLanesGivesNoLanes() throws Exception {
    tuning = FabricTuning.DEFAULTS.withLanes(0);
    start((ctx, svc, op, req) -> null, 1, 16);
    NettyConnection c = (NettyConnection) connect();
    assertFalse(c.hasLanes(), where());
    assertEquals(0, lanesAfterReads(c), where());
  }

  @Test
  void loopWritesOnlyAttachesNoDescriptor() throws Exception {
    tuning = FabricTuning.DEFAULTS.withDirectWrites(false);
    start((ctx, svc, op, req) -> null, 1, 16);
    NettyConnection c = (NettyConnection) connect();
    assertFalse(c.directWrites(), where());
    lanesAfterReads(c);
    assertStillServes();
  }
}
