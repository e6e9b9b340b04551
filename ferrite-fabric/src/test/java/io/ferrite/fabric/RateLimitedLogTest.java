package io.ferrite.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One full line per cause per window, then one line with the count; the count is never lost (the
 * window's end, a flush, or a timer that refuses). The window is an hour here, so its scheduled end
 * never runs during the test: the counts come from {@link RateLimitedLog#flush}.
 */
class RateLimitedLogTest {
  private static final String NAME = "io.ferrite.fabric.RateLimitedLogTest.capture";
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final Logger jul = Logger.getLogger(NAME);
  private final Handler capture =
      new Handler() {
        @Override
        public void publish(LogRecord r) {
          lines.add(r.getMessage());
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };
  private final ScheduledThreadPoolExecutor timer =
      new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("rate-limited-log-test", true));

  @BeforeEach
  void attach() {
    jul.setLevel(Level.ALL);
    jul.addHandler(capture);
  }

  @AfterEach
  void detach() {
    jul.removeHandler(capture);
    timer.shutdownNow();
  }

  private RateLimitedLog log() {
    return new RateLimitedLog(
        System.getLogger(NAME),
        System.Logger.Level.WARNING,
        Duration.ofHours(1),
        "refused {0} more in the last {1} s: {2}");
  }

  @Test
  void oneLinePerCauseThenTheCount() {
    RateLimitedLog log = log();
    for (int i = 0; i < 100; i++) {
      log.log(timer, "bad frame", null, "closing connection {0}: bad", i);
      if (i % 2 == 0) {
        log.log(timer, "no handshake", null, "closing connection {0}: slow", i);
      }
    }
    assertEquals(List.of("closing connection 0: bad", "closing connection 0: slow"), lines);
    log.flush();
    assertEquals(4, lines.size(), lines.toString());
    assertTrue(lines.contains("refused 99 more in the last 3600 s: bad frame"), lines.toString());
    assertTrue(
        lines.contains("refused 49 more in the last 3600 s: no handshake"), lines.toString());

    log.log(timer, "bad frame", null, "closing connection {0}: bad", 100);
    assertEquals("closing connection 100: bad", lines.get(4), "a new window: in full again");
    log.flush();
    assertEquals(5, lines.size(), "nothing counted, nothing to say: " + lines);
  }

  @Test
  void aTimerThatRefusesLogsTheCountAtOnce() {
    timer.shutdownNow();
    RateLimitedLog log = log();
    log.log(timer, "bad frame", null, "first");
    log.log(timer, "bad frame", null, "second");
    assertEquals(List.of("first", "refused 1 more in the last 3600 s: bad frame"), lines);
  }
}
