package io.ferrite.tx;

/**
 * The answer to {@link TxClient#ship}: whether the shipped function's transaction committed, and
 * what the function returned in the attempt that did (empty when it aborted).
 */
public record Shipped(TxResult result, byte[] output) {
  /** Whether it committed. */
  public boolean committed() {
    return result.committed();
  }
}
