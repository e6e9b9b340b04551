package io.ferrite.tx;

/**
 * What {@link Transaction#txCommit} returns: committed, or aborted with a reason. An aborted
 * transaction changed nothing and left nothing locked (or will not, once the participants' lock
 * leases resolve a failed ABORT); every reason is retryable with a new transaction.
 *
 * @param reason null when committed
 * @param detail what failed and where, for logs
 */
public record TxResult(Reason reason, String detail) {
  /** Why a transaction aborted. */
  public enum Reason {
    /** An object of the write set was locked by another transaction (FaRM §3.4, LOCK). */
    LOCKED,
    /**
     * An object's version changed (or it was freed) since the transaction read it: at LOCK for the
     * write set, at VALIDATE for the read set.
     */
    VALIDATION,
    /** A participant did not answer (down, unreachable, or its answer was lost). */
    UNREACHABLE,
    /** The decider had already aborted the transaction: its lock lease lapsed before COMMIT. */
    LEASE_LAPSED,
    /** A participant is no longer the primary of a region (the client's map is refreshed). */
    STALE_MAP
  }

  static final TxResult COMMITTED = new TxResult(null, "committed");

  static TxResult abort(Reason reason, String detail) {
    return new TxResult(reason, detail);
  }

  /** Whether the transaction committed. */
  public boolean committed() {
    return reason == null;
  }
}
