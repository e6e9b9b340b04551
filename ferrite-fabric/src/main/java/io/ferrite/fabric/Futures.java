package io.ferrite.fabric;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Helpers for the futures of the data path. */
public final class Futures {
  private Futures() {}

  /**
   * Waits for {@code f} and returns its value, or throws its failure as a {@link FerriteException}.
   */
  public static <T> T join(CompletableFuture<T> f) {
    try {
      return f.join();
    } catch (CompletionException | java.util.concurrent.CancellationException e) {
      throw FerriteException.unwrap(e);
    }
  }

  /**
   * Whether the calling thread is a fabric I/O thread (a Netty event loop: the tcp fabric's). Such
   * a thread must never wait for a future: the answer it would wait for may be one only it can
   * read, and every timeout on its connections is scheduled on it too. Continuations of data-path
   * futures run there; code reached from them must take the asynchronous path. (False positives
   * cost nothing but a wait saved: every {@code FastThreadLocalThread} counts.)
   */
  public static boolean onIoThread() {
    return Thread.currentThread() instanceof io.netty.util.concurrent.FastThreadLocalThread;
  }

  /** A future already failed with a {@link FerriteException} of {@code code}. */
  public static <T> CompletableFuture<T> failed(ErrorCode code, String message) {
    return CompletableFuture.failedFuture(new FerriteException(code, message));
  }
}
