package io.ferrite.fabric.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test when Netty's {@link ResourceLeakDetector} reports a leaked buffer: a {@link ByteBuf}
 * that became unreachable without being released.
 *
 * <pre>
 * &#64;ExtendWith(NettyLeakExtension.class)
 * class TcpFabricContractTest extends FabricContractTest { ... }
 * </pre>
 *
 * <h2>How</h2>
 *
 * Netty finds a leak only when the garbage collector clears the buffer's tracker, and reports it
 * only on a later allocation. So after each test the extension runs {@code System.gc()}, waits a
 * moment, allocates and releases a few tracked buffers to make the detector drain its queue, and
 * fails the test if any report arrived since the test started. Reports are caught twice over, so
 * neither the logging backend nor class-initialization order can hide them:
 *
 * <ul>
 *   <li>a {@link ResourceLeakDetectorFactory} whose detectors record every report (installed when
 *       this class initializes; it serves detectors Netty creates from then on);
 *   <li>a {@code java.util.logging} handler on Netty's {@code ResourceLeakDetector} logger, which
 *       sees the reports of detectors created earlier, as long as Netty logs through JUL (its
 *       default when no SLF4J or Log4j is on the class path).
 * </ul>
 *
 * <p>Loading this class sets Netty's detection level to {@code PARANOID} for the JVM (every buffer
 * tracked; the surefire configuration sets it too). Costs: a full GC per test, so register it on
 * classes that use Netty, not globally. Limits, as with Netty's own tooling: a leak is attributed
 * to the test during which it is found, which may be a later one; Netty reports each distinct
 * allocation stack once per JVM.
 */
public final class NettyLeakExtension implements BeforeEachCallback, AfterEachCallback {
  private static final String DETECTOR_LOGGER = ResourceLeakDetector.class.getName();
  private static final List<String> REPORTS = new CopyOnWriteArrayList<>();
  private static final AtomicBoolean INSTALLED = new AtomicBoolean();
  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(NettyLeakExtension.class);
  private static final int GC_ROUNDS = 3;
  // Held strongly: java.util.logging keeps loggers only weakly, and with them our handler.
  private static final Logger DETECTOR_LOG = Logger.getLogger(DETECTOR_LOGGER);

  static {
    install();
  }

  /** Installs the recording factory and log handler once per JVM; idempotent. */
  public static void install() {
    if (!INSTALLED.compareAndSet(false, true)) {
      return;
    }
    if (ResourceLeakDetector.getLevel().ordinal() < ResourceLeakDetector.Level.PARANOID.ordinal()) {
      ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    }
    ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
    DETECTOR_LOG.addHandler(new RecordingHandler());
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    // Drain what earlier code leaked so that it is not blamed on this test.
    collect(0);
    context.getStore(NAMESPACE).put("start", REPORTS.size());
  }

  @Override
  public void afterEach(ExtensionContext context) {
    Integer start = context.getStore(NAMESPACE).get("start", Integer.class);
    List<String> leaks = collect(start == null ? 0 : start);
    if (!leaks.isEmpty()) {
      throw new AssertionError(
          leaks.size()
              + " Netty buffer leak report(s) during "
              + context.getDisplayName()
              + ": a ByteBuf was garbage-collected without release()."
              + System.lineSeparator()
              + String.join(System.lineSeparator(), leaks));
    }
  }

  /**
   * Makes the detectors report what the GC has found, and returns the reports recorded since index
   * {@code from} (deduplicated: a report may arrive both through the detector and the log).
   */
  public static List<String> collect(int from) {
    for (int round = 0; round < GC_ROUNDS; round++) {
      System.gc();
      try {
        // The reference handler thread enqueues cleared trackers shortly after the GC.
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      // In PARANOID mode every tracked allocation first drains the detector's queue. Every
      // ByteBuf shares one detector; unpooled direct buffers are tracked (heap ones are not).
      Unpooled.directBuffer(1).release();
      if (REPORTS.size() > from) {
        break;
      }
    }
    List<String> out = new ArrayList<>();
    List<String> all = new ArrayList<>(REPORTS);
    for (int i = from; i < all.size(); i++) {
      if (!out.contains(all.get(i))) {
        out.add(all.get(i));
      }
    }
    return out;
  }

  /** Total reports recorded in this JVM so far; an index for {@link #collect}. */
  public static int reportCount() {
    return REPORTS.size();
  }

  private static void record(String report) {
    REPORTS.add(report);
  }

  /** Makes detectors that record each report before logging it as usual. */
  @SuppressWarnings("deprecation") // the abstract factory method Netty still requires
  private static final class RecordingFactory extends ResourceLeakDetectorFactory {
    @Override
    public <T> ResourceLeakDetector<T> newResourceLeakDetector(
        Class<T> resource, int samplingInterval, long maxActive) {
      return new RecordingDetector<>(resource, samplingInterval);
    }

    @Override
    public <T> ResourceLeakDetector<T> newResourceLeakDetector(
        Class<T> resource, int samplingInterval) {
      return new RecordingDetector<>(resource, samplingInterval);
    }
  }

  private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
    RecordingDetector(Class<T> resource, int samplingInterval) {
      super(resource, samplingInterval);
    }

    @Override
    protected boolean needReport() {
      // Report even when the logger is off: the test must fail regardless of log levels.
      return true;
    }

    @Override
    protected void reportTracedLeak(String resourceType, String records) {
      record("LEAK: " + resourceType + ".release() was not called." + records);
      super.reportTracedLeak(resourceType, records);
    }

    @Override
    protected void reportUntracedLeak(String resourceType) {
      record("LEAK: " + resourceType + ".release() was not called (no access records).");
      super.reportUntracedLeak(resourceType);
    }
  }

  /** Catches reports of detectors made before the factory was installed (Netty logging via JUL). */
  static final class RecordingHandler extends Handler {
    @Override
    public void publish(LogRecord r) {
      String msg = r.getMessage();
      if (r.getLevel().intValue() >= Level.SEVERE.intValue()
          && msg != null
          && msg.contains("LEAK")) {
        Object[] params = r.getParameters();
        StringBuilder sb = new StringBuilder(msg);
        if (params != null) {
          for (Object p : params) {
            sb.append(' ').append(p);
          }
        }
        // The recording detector already recorded its own reports; keep only foreign ones.
        if (!isFromRecordingDetector(r)) {
          record(sb.toString());
        }
      }
    }

    private static boolean isFromRecordingDetector(LogRecord r) {
      for (StackTraceElement e : new Throwable().getStackTrace()) {
        if (e.getClassName().equals(RecordingDetector.class.getName())) {
          return true;
        }
      }
      return false;
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }
}
