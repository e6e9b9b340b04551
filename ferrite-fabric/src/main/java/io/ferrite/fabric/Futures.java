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

  /** A future already failed with a {@link FerriteException} of {@code code}. */
  public static <T> CompletableFuture<T> failed(ErrorCode code, String message) {
    return CompletableFuture.failedFuture(new FerriteException(code, message));
  }
}
