package io.ferrite.kernel.master;

import io.ferrite.kernel.proto.MasterProtocol;
import java.util.function.Supplier;

/**
 * The request id of the call the current thread runs for: set by the master around the handler of a
 * {@link MasterProtocol#REQUEST} (a kernel opcode or an extension's), read by {@link MasterState}'s
 * commit, which writes {@link MasterEvent.RequestApplied} into the same journal record as the
 * call's first mutation. That record is what makes a retry of the same id answer the remembered
 * answer instead of running the call again: attribution is by thread, so a face that commits a
 * call's mutation from another thread (a mutation re-run once leases are revoked, say) carries the
 * scope there with {@link #within}. A mutation committed outside any scope is simply not remembered
 * (its retry runs again, as before request ids).
 *
 * <p>Thread-safe: {@link #applied} is written by whichever thread commits and read by the thread
 * that completes the call (a volatile: the commit happens before the call's future completes, but
 * possibly on another thread).
 */
public final class RequestScope {
  private static final ThreadLocal<RequestScope> CURRENT = new ThreadLocal<>();

  final MasterProtocol.RequestId id;
  private volatile boolean applied;

  /**
   * The state whose sink holds this call's first record open for its answer, or null; written under
   * that state's lock, read by {@link #release} without it.
   */
  volatile MasterState heldBy;

  /** Set once the call went asynchronous: its records are no longer held (under the state lock). */
  volatile boolean unheld;

  RequestScope(MasterProtocol.RequestId id) {
    this.id = id;
  }

  /**
   * The scope of the call this thread runs for, or null (a call without an id, a background job).
   */
  public static RequestScope current() {
    return CURRENT.get();
  }

  /**
   * Runs {@code body} on this thread within {@code scope} (null: within none), then restores the
   * scope this thread had: for a face that runs part of a call on another thread than the one that
   * received it.
   */
  public static <T> T within(RequestScope scope, Supplier<T> body) {
    RequestScope before = CURRENT.get();
    set(scope);
    try {
      return body.get();
    } finally {
      set(before);
    }
  }

  private static void set(RequestScope scope) {
    if (scope == null) {
      CURRENT.remove();
    } else {
      CURRENT.set(scope);
    }
  }

  /** Whether the call committed a mutation (its REQUEST_APPLIED is written). */
  boolean applied() {
    return applied;
  }

  void markApplied() {
    applied = true;
  }

  /**
   * Writes this call's record if it is still held for its answer (the handler returned without
   * answering through {@link MasterService}: an inline answer, a failure): never leave the journal
   * waiting. A journal that refuses is logged; its failure fails every later answer anyway.
   */
  void release() {
    MasterState s = heldBy;
    if (s != null) {
      try {
        s.unhold(this);
      } catch (RuntimeException e) {
        System.getLogger(RequestScope.class.getName())
            .log(System.Logger.Level.WARNING, "cannot write the record of " + this, e);
      }
    }
  }

  @Override
  public String toString() {
    return "request " + Long.toHexString(id.sessionId()) + "/" + id.seq();
  }
}
