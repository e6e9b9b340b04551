package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;

/** The leak check would catch a leak: a buffer dropped unreleased is reported. */
class NettyLeakCheckTest {
  @Test
  void aDroppedBufferIsReported() {
    assertTrue(NettyLeakCheck.paranoid(), "tests must run with paranoid leak detection");
    NettyLeakCheck.collect();
    NettyLeakCheck.takeLeaks();
    leakOne();
    boolean seen = false;
    for (int i = 0; i < 20 && !seen; i++) {
      NettyLeakCheck.collect();
      seen = !NettyLeakCheck.takeLeaks().isEmpty();
    }
    assertTrue(seen, "a leaked buffer was not reported");
  }

  private static void leakOne() {
    PooledByteBufAllocator.DEFAULT.directBuffer(64).writeLong(42);
  }
}
