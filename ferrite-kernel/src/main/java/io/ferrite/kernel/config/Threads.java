package io.ferrite.kernel.config;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** Named, owned threads: every thread the kernel starts says whose it is. */
public final class Threads {
  private static final System.Logger LOG = System.getLogger(Threads.class.getName());

  private Threads() {}

  /** A factory of daemon threads named {@code prefix-N} that log uncaught exceptions. */
  public static ThreadFactory named(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      t.setUncaughtExceptionHandler(
          (th, e) -> LOG.log(System.Logger.Level.ERROR, "uncaught in " + th.getName(), e));
      return t;
    };
  }

  /** A single-threaded scheduler on a thread named {@code name-1}. */
  public static ScheduledThreadPoolExecutor scheduler(String name) {
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, named(name));
    s.setRemoveOnCancelPolicy(true);
    s.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    return s;
  }
}
