package io.ferrite.kernel.ops;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.ToDoubleFunction;

/**
 * {@code ferrite.log.records} and {@code ferrite.log.fsyncs} (tag {@code log}: {@code journal} for
 * the master's, {@code kv} for the kv service's op log): function counters over the counts the
 * log's group commit keeps, read at scrape time. Their ratio is the group commit's batch size.
 */
public final class LogMeters {
  private LogMeters() {}

  /**
   * Registers the two counters of {@code log} over {@code owner}, which must stay reachable as long
   * as the registry (Micrometer holds it weakly): the log itself, or the component holding it.
   */
  public static <T> void register(
      MeterRegistry r,
      String log,
      T owner,
      ToDoubleFunction<T> records,
      ToDoubleFunction<T> fsyncs) {
    FunctionCounter.builder("ferrite.log.records", owner, records)
        .description("Records appended to a log")
        .tag("log", log)
        .register(r);
    FunctionCounter.builder("ferrite.log.fsyncs", owner, fsyncs)
        .description("fsyncs of a log (group commit: one covers many records)")
        .tag("log", log)
        .register(r);
  }
}
