package io.ferrite.kernel.master;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.FileChannel;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The master journal's real fsync behind a gate a test can hold shut, an optional delay, and an
 * injected failure: a wrapper, not a mock (what passes the gate is {@code FileChannel.force}).
 * Shared by the kernel's and the faces' tests of acknowledgement after durability; {@link #start}
 * starts a master whose journal fsyncs through it.
 */
public final class HeldFsync implements Journal.Fsync {
  private volatile CountDownLatch gate = new CountDownLatch(0);

  /** A permit per fsync that reached the gate. */
  public final Semaphore entered = new Semaphore(0);

  /** Fsyncs started so far. */
  public final AtomicInteger calls = new AtomicInteger();

  /** A delay after the gate, in milliseconds (a slow disk). */
  public volatile long delayMillis;

  /** When set, every fsync fails after the gate. */
  public volatile boolean fail;

  /** From now on every fsync waits at the gate until {@link #open}. */
  public void hold() {
    entered.drainPermits();
    gate = new CountDownLatch(1);
  }

  /** Lets every held and later fsync through. */
  public void open() {
    gate.countDown();
  }

  /** A master like {@link Master#start(FerriteConfig, Credentials, List, List)}, fsyncing here. */
  public Master start(
      FerriteConfig config,
      Credentials credentials,
      List<Fabric> fabrics,
      List<MasterExtension> extensions) {
    return Master.start(config, credentials, fabrics, extensions, this);
  }

  @Override
  public void force(FileChannel log) throws IOException {
    calls.incrementAndGet();
    entered.release();
    try {
      if (!gate.await(60, TimeUnit.SECONDS)) {
        throw new IOException("test fsync held for 60 s: the test forgot to open it");
      }
      if (delayMillis > 0) {
        Thread.sleep(delayMillis);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("test fsync interrupted");
    }
    if (fail) {
      throw new IOException("injected fsync failure");
    }
    log.force(false);
  }
}
