package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test if Netty's {@link ResourceLeakDetector} reported a leaked buffer during it. Surefire
 * runs with {@code -Dio.netty.leakDetection.level=paranoid}, so every buffer is tracked; Netty logs
 * a leak (through java.util.logging, since no other logging backend is on the class path) when a
 * tracked buffer is garbage collected unreleased. After each test this forces collections and
 * allocations (a leak is reported on a later allocation) and looks for such a report.
 */
public final class NettyLeakCheck implements BeforeEachCallback, AfterEachCallback {
  private static final List<String> LEAKS = new CopyOnWriteArrayList<>();
  // Held strongly: java.util.logging keeps loggers weakly.
  private static final Logger DETECTOR_LOG = Logger.getLogger(ResourceLeakDetector.class.getName());

  static {
    DETECTOR_LOG.addHandler(
        new Handler() {
          @Override
          public void publish(LogRecord record) {
            String msg = record.getMessage();
            if (msg != null && msg.contains("LEAK")) {
              LEAKS.add(msg);
            }
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        });
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    collect();
    LEAKS.clear();
  }

  @Override
  public void afterEach(ExtensionContext context) {
    collect();
    if (!LEAKS.isEmpty()) {
      String first = LEAKS.get(0);
      int n = LEAKS.size();
      LEAKS.clear();
      fail(n + " Netty buffer leak(s) reported during the test; first:\n" + first);
    }
  }

  /** Collects garbage and allocates tracked buffers so pending leak reports are made now. */
  static void collect() {
    for (int round = 0; round < 3; round++) {
      System.gc();
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      for (int i = 0; i < 8; i++) {
        ByteBuf a = PooledByteBufAllocator.DEFAULT.directBuffer(16);
        a.release();
        ByteBuf b = UnpooledByteBufAllocator.DEFAULT.heapBuffer(16);
        b.release();
      }
    }
  }

  /** Returns and forgets the leak reports made so far (for the extension's own test). */
  static List<String> takeLeaks() {
    List<String> out = List.copyOf(LEAKS);
    LEAKS.clear();
    return out;
  }

  /** For a self-test: true if the level is one that tracks every buffer. */
  static boolean paranoid() {
    return ResourceLeakDetector.getLevel() == ResourceLeakDetector.Level.PARANOID;
  }
}
