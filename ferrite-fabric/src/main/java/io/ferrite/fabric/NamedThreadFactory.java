package io.ferrite.fabric;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** Threads are named and owned: every pool Ferrite starts names its threads after its purpose. */
public final class NamedThreadFactory implements ThreadFactory {
  private final String prefix;
  private final boolean daemon;
  private final AtomicInteger n = new AtomicInteger();

  public NamedThreadFactory(String prefix, boolean daemon) {
    this.prefix = prefix;
    this.daemon = daemon;
  }

  @Override
  public Thread newThread(Runnable r) {
    Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
    t.setDaemon(daemon);
    return t;
  }
}
