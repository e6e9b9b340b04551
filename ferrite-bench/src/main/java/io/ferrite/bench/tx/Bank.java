package io.ferrite.bench.tx;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The bank-transfer workload on the tx face, shared by {@code ferrite tx bank} and {@code bench
 * tx}: {@code n} accounts, each a tx object of {@value #ACCOUNT_BYTES} bytes (the balance, a
 * little-endian long), and transfers that read two accounts and write both in one transaction.
 * Every transfer keeps the total, so the sum of the balances, read in one transaction or by
 * lock-free reads once the transfers stopped, must be {@code n × initial}: the invariant.
 *
 * <p>Thread-safe: the accounts are fixed once created; each transfer runs its own transaction.
 */
public final class Bank {
  /** The payload of an account: its balance, a little-endian long. */
  public static final int ACCOUNT_BYTES = 8;

  /** Accounts created per transaction. */
  static final int CREATE_BATCH = 64;

  private final List<FatPointer> accounts;
  private final long initial;

  private Bank(List<FatPointer> accounts, long initial) {
    this.accounts = List.copyOf(accounts);
    this.initial = initial;
  }

  /**
   * Creates {@code n} accounts holding {@code initial} each, up to {@value #CREATE_BATCH} per
   * transaction, round-robin over {@code creators}: each {@link TxClient} allocates in a region of
   * its own, and the master places a new region on the server with the fewest, so accounts made by
   * as many clients as there are servers are spread over all of them.
   *
   * @throws IllegalArgumentException for fewer than 2 accounts or a negative balance
   */
  public static Bank create(List<TxClient> creators, int n, long initial) {
    if (n < 2) {
      throw new IllegalArgumentException("accounts: " + n + " (expected: >= 2)");
    }
    if (initial < 0) {
      throw new IllegalArgumentException("initial balance: " + initial + " (expected: >= 0)");
    }
    if (creators.isEmpty()) {
      throw new IllegalArgumentException("no tx client to create the accounts with");
    }
    List<FatPointer> made = new ArrayList<>(n);
    byte[] value = balance(initial);
    int batch = 0;
    // Every creator makes at least one batch when there are accounts enough.
    int size = Math.min(CREATE_BATCH, (n + creators.size() - 1) / creators.size());
    while (made.size() < n) {
      TxClient c = creators.get(batch++ % creators.size());
      int count = Math.min(size, n - made.size());
      for (int attempt = 0; ; attempt++) {
        Transaction t = c.txBegin();
        List<FatPointer> these = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          // No hint: the client's current region, or a new one when that is full.
          FatPointer p = t.txAlloc(ACCOUNT_BYTES, null);
          t.txWrite(p, value);
          these.add(p);
        }
        TxResult r = t.txCommit();
        if (r.committed()) {
          made.addAll(these);
          break;
        }
        if (attempt >= 100) {
          throw new IllegalStateException("creating accounts: aborted 100 times, last: " + r);
        }
      }
    }
    return new Bank(made, initial);
  }

  /** The accounts, in creation order. */
  public List<FatPointer> accounts() {
    return accounts;
  }

  /** The total every sum must find: accounts × the initial balance. */
  public long expectedTotal() {
    return accounts.size() * initial;
  }

  static byte[] balance(long v) {
    return ByteBuffer.allocate(ACCOUNT_BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(0, v).array();
  }

  static long balance(byte[] payload) {
    return ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
  }

  /**
   * One transfer between two distinct accounts drawn uniformly from {@code r}, of 1 to 10 units (at
   * most what the payer holds, so no balance goes negative), retried with the same accounts until
   * it commits: read both, write both, commit. Each abort is counted in {@code stats} by its
   * reason, and a retryable failure (a read that found the object locked for too long: BUSY; an
   * outcome the coordinator could not learn: UNAVAILABLE) by its error code; either way the
   * transfer is tried again, which keeps the total (a transfer applied twice still moves money, it
   * does not make any).
   *
   * @throws FerriteException a failure that is not retryable
   */
  public void transfer(TxClient c, Random r, BankStats stats) {
    transfer(c, r, stats, Long.MAX_VALUE);
  }

  /**
   * As {@link #transfer(TxClient, Random, BankStats)}, but gives up once {@link System#nanoTime}
   * passes {@code deadlineNanos} (a workload that must end while a server is down and every attempt
   * aborts).
   *
   * @return whether the transfer committed
   */
  public boolean transfer(TxClient c, Random r, BankStats stats, long deadlineNanos) {
    int n = accounts.size();
    int from = r.nextInt(n);
    int to = r.nextInt(n - 1);
    if (to >= from) {
      to++;
    }
    long amount = 1 + r.nextInt(10);
    FatPointer a = accounts.get(from);
    FatPointer b = accounts.get(to);
    for (int attempt = 0; ; attempt++) {
      if (attempt > 0 && System.nanoTime() - deadlineNanos > 0) {
        return false;
      }
      Transaction t = c.txBegin();
      TxResult res;
      try {
        // Both reads in flight together: one round trip over tcp, not two.
        List<byte[]> both = t.txReadAll(List.of(a, b));
        long ba = balance(both.get(0));
        long bb = balance(both.get(1));
        long moved = Math.min(amount, Math.max(0, ba));
        t.txWrite(a, balance(ba - moved));
        t.txWrite(b, balance(bb + moved));
        res = t.txCommit();
      } catch (FerriteException e) {
        if (!e.retryable()) {
          throw e;
        }
        stats.failed(e.code());
        continue;
      }
      if (res.committed()) {
        stats.committed();
        return true;
      }
      stats.aborted(res.reason());
    }
  }

  /**
   * The sum of every balance, read in one transaction (a consistent snapshot, validated at commit
   * while transfers may run), retried until it commits.
   */
  public long sumInTransaction(TxClient c, BankStats stats) {
    return sumInTransaction(c, stats, Duration.ofSeconds(30));
  }

  /**
   * As {@link #sumInTransaction(TxClient, BankStats)}, trying for at most {@code patience}.
   *
   * @throws FerriteException TIMEOUT, naming the aborts, if no attempt committed in time
   */
  public long sumInTransaction(TxClient c, BankStats stats, Duration patience) {
    long deadline = System.nanoTime() + patience.toNanos();
    for (int attempt = 0; ; attempt++) {
      if (attempt > 0 && System.nanoTime() - deadline > 0) {
        throw new FerriteException(
            ErrorCode.TIMEOUT,
            "the sum of "
                + accounts.size()
                + " balances in one transaction: no attempt committed in "
                + patience.toMillis()
                + " ms ("
                + stats.snapshot().abortsByReason()
                + ")");
      }
      Transaction t = c.txBegin();
      long sum = 0;
      TxResult res;
      try {
        for (FatPointer p : accounts) {
          sum += balance(t.txRead(p));
        }
        res = t.txCommit();
      } catch (FerriteException e) {
        if (!e.retryable()) {
          throw e;
        }
        stats.failed(e.code());
        continue;
      }
      if (res.committed()) {
        return sum;
      }
      stats.aborted(res.reason());
    }
  }

  /**
   * The sum of every balance by lock-free reads (one one-sided read each): the total only once no
   * transfer runs, since the reads are not one snapshot.
   */
  public long sumLockFree(TxClient c) {
    long sum = 0;
    for (FatPointer p : accounts) {
      sum += balance(c.lockFreeRead(p));
    }
    return sum;
  }

  /** Frees every account, {@value #CREATE_BATCH} per transaction (best effort: aborts retried). */
  public void free(TxClient c) {
    for (int i = 0; i < accounts.size(); i += CREATE_BATCH) {
      List<FatPointer> these = accounts.subList(i, Math.min(accounts.size(), i + CREATE_BATCH));
      for (int attempt = 0; attempt < 100; attempt++) {
        Transaction t = c.txBegin();
        these.forEach(t::txFree);
        if (t.txCommit().committed()) {
          break;
        }
      }
    }
  }
}
