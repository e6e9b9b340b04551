package io.ferrite.fabric.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

class NettyLeakExtensionTest {
  @Test
  void failsATestThatLeaksABufferAndPassesOneThatReleases() {
    Map<String, ExtensionSelfTest.Outcome> outcomes = ExtensionSelfTest.run(Deliberate.class);

    ExtensionSelfTest.Outcome leaky = outcomes.get("leaksADirectBuffer");
    assertTrue(leaky.failed(), "the leaking test must fail: " + leaky.result());
    Throwable t = leaky.failure().orElseThrow();
    assertInstanceOf(AssertionError.class, t);
    assertTrue(t.getMessage().contains("LEAK"), t.getMessage());
    assertTrue(t.getMessage().contains("ByteBuf"), t.getMessage());
    // Netty's access record points at the allocation site.
    assertTrue(t.getMessage().contains("leakOne"), t.getMessage());

    ExtensionSelfTest.Outcome clean = outcomes.get("releasesItsBuffer");
    assertFalse(clean.failed(), "a test that releases must pass: " + clean.result());
  }

  @Test
  void collectSeesALeakMadeDirectly() {
    int from = NettyLeakExtension.reportCount();
    leakAnother();
    assertFalse(NettyLeakExtension.collect(from).isEmpty(), "leak not reported");
  }

  @Test
  void logHandlerRecordsLeakReportsOfDetectorsMadeBeforeInstall() {
    int from = NettyLeakExtension.reportCount();
    LogRecord r = new LogRecord(Level.SEVERE, "LEAK: {0}.release() was not called");
    r.setParameters(new Object[] {"ByteBuf"});
    new NettyLeakExtension.RecordingHandler().publish(r);
    new NettyLeakExtension.RecordingHandler()
        .publish(new LogRecord(Level.WARNING, "not a leak report"));
    assertEquals(from + 1, NettyLeakExtension.reportCount());
  }

  private static void leakAnother() {
    ByteBuf b = Unpooled.directBuffer(32);
    b.writeLong(42);
  }

  /** Run only by the test above, through a nested launcher. */
  @ExtendWith(ExtensionSelfTest.OnlyWhenLaunched.class)
  @ExtendWith(NettyLeakExtension.class)
  static class Deliberate {
    @Test
    void leaksADirectBuffer() {
      leakOne();
    }

    @Test
    void releasesItsBuffer() {
      ByteBuf b = Unpooled.directBuffer(64);
      b.writeLong(7);
      assertEquals(7, b.readLong());
      b.release();
    }

    private static void leakOne() {
      // Allocated, used and dropped without release(): unreachable once this method returns.
      ByteBuf b = Unpooled.directBuffer(64);
      b.writeLong(1);
    }
  }
}
