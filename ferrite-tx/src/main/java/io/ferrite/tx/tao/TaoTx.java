package io.ferrite.tx.tao;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxResult;
import io.ferrite.tx.tao.TaoLayout.Chunk;
import io.ferrite.tx.tao.TaoLayout.Node;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Tao's transaction plumbing: an update runs in a fresh transaction until it commits (with backoff,
 * BUSY after {@link #UPDATE_PATIENCE_NANOS}); objects and chunks read and decoded, a deleted object
 * worded as an unknown Tao id; and the counters {@link Tao} reports. Thread-safe.
 */
final class TaoTx {
  /** How long an update retries aborted transactions before it answers BUSY. */
  static final long UPDATE_PATIENCE_NANOS = 5_000_000_000L;

  final TxClient tx;
  final LongAdder aborts = new LongAdder();
  final LongAdder refetches = new LongAdder();
  final LongAdder fallbacks = new LongAdder();

  TaoTx(TxClient tx) {
    this.tx = tx;
  }

  /** An update: one transaction body, run again (fresh transaction) until it commits. */
  interface Body<T> {
    /** Stages the update in {@code t}; null from an attempt that must start again. */
    T stage(Transaction t);
  }

  <T> T update(String op, FatPointer id, Body<T> body) {
    long start = System.nanoTime();
    for (int attempt = 0; ; attempt++) {
      Transaction t = tx.txBegin();
      T out = body.stage(t);
      if (out == null) {
        pause(attempt, start, op + (id == null ? "" : " on " + Tao.idString(id)));
        continue;
      }
      TxResult r = t.txCommit();
      if (r.committed()) {
        return out;
      }
      aborts.increment();
      pause(attempt, start, op + (id == null ? "" : " on " + Tao.idString(id)) + ": " + r.detail());
    }
  }

  static void pause(int attempt, long start, String what) {
    if (attempt > 64 && System.nanoTime() - start > UPDATE_PATIENCE_NANOS) {
      throw new FerriteException(
          ErrorCode.BUSY,
          what
              + ": aborted "
              + attempt
              + " times over "
              + UPDATE_PATIENCE_NANOS / 1_000_000
              + " ms (retryable: contention)");
    }
    if (attempt > 2) {
      LockSupport.parkNanos(
          ThreadLocalRandom.current().nextLong(1_000L << Math.min(attempt - 2, 10)));
    }
  }

  /** The object {@code id} by one lock-free read; NOT_FOUND, worded for Tao, if unknown. */
  Node readNode(FatPointer id) {
    Tao.checkId("id", id);
    try {
      return TaoLayout.decodeNode(id, tx.lockFreeRead(id));
    } catch (FerriteException e) {
      throw e.code() == ErrorCode.NOT_FOUND ? unknown(id, e) : e;
    }
  }

  /**
   * A chunk read in {@code t}; null if it was freed (its list changed: the caller starts again).
   */
  static Chunk txChunk(Transaction t, FatPointer c) {
    try {
      return TaoLayout.decodeChunk(c, t.txRead(c));
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      return null;
    }
  }

  static Node txNode(Transaction t, FatPointer id) {
    try {
      return TaoLayout.decodeNode(id, t.txRead(id));
    } catch (FerriteException e) {
      throw e.code() == ErrorCode.NOT_FOUND ? unknown(id, e) : e;
    }
  }

  static FerriteException unknown(FatPointer id, FerriteException cause) {
    return new FerriteException(
        ErrorCode.NOT_FOUND,
        "unknown Tao object id "
            + Tao.idString(id)
            + ": deleted, or never added ("
            + cause.getMessage()
            + ")",
        cause);
  }
}
