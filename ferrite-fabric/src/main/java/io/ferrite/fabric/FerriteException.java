package io.ferrite.fabric;

/**
 * The one exception type of Ferrite. It carries an {@link ErrorCode}, from which follow its {@link
 * ErrorCategory} and whether a retry can help, and a message that says what failed and where.
 *
 * <p>On the data path failures travel as values (a future completed exceptionally with this
 * exception); blocking conveniences throw it.
 */
public class FerriteException extends RuntimeException {
  private final ErrorCode code;

  public FerriteException(ErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  public FerriteException(ErrorCode code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  public ErrorCode code() {
    return code;
  }

  public ErrorCategory category() {
    return code.category();
  }

  public boolean retryable() {
    return code.retryable();
  }

  @Override
  public String getMessage() {
    return code + ": " + super.getMessage();
  }

  /** The message without the code prefix, as it travels on the wire. */
  public String detail() {
    return super.getMessage();
  }

  /**
   * Unwraps {@code CompletionException}/{@code ExecutionException} layers and returns the {@link
   * FerriteException} inside, or wraps anything else as {@link ErrorCode#INTERNAL}.
   */
  public static FerriteException unwrap(Throwable t) {
    Throwable cur = t;
    while ((cur instanceof java.util.concurrent.CompletionException
            || cur instanceof java.util.concurrent.ExecutionException)
        && cur.getCause() != null) {
      cur = cur.getCause();
    }
    if (cur instanceof FerriteException fe) {
      return fe;
    }
    return new FerriteException(ErrorCode.INTERNAL, String.valueOf(cur), cur);
  }
}
