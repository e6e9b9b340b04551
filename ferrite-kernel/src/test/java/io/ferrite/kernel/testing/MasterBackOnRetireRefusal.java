package io.ferrite.kernel.testing;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * For tests of a replay while the master is away: runs {@code restart} (a new master over the same
 * journal) when {@code RegionStore} first logs that it could not ask the master to retire an empty
 * block-pool region, on the thread that logged it (the server's boot thread: the order is fixed).
 * Closing it removes the log handler.
 */
public final class MasterBackOnRetireRefusal implements AutoCloseable {
  /** Where RegionStore says that it could not ask the master to retire a pool region. */
  private static final Logger REGION_STORE =
      Logger.getLogger("io.ferrite.kernel.server.RegionStore");

  private final AtomicInteger refusals = new AtomicInteger();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Handler handler;

  public MasterBackOnRetireRefusal(Runnable restart) {
    handler =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            String m = r.getMessage();
            if (m != null
                && m.startsWith("cannot retire block-pool region")
                && refusals.getAndIncrement() == 0) {
              try {
                restart.run();
              } catch (Throwable e) {
                failure.set(e);
              }
            }
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    REGION_STORE.addHandler(handler);
  }

  /** How many refusals were logged (the first restarted the master). */
  public int refusals() {
    return refusals.get();
  }

  /** What the restart threw, or null. */
  public Throwable failure() {
    return failure.get();
  }

  @Override
  public void close() {
    REGION_STORE.removeHandler(handler);
  }
}
