package io.ferrite.fabric.shm;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A future of a ring RPC, or of a stage derived from one ({@code thenApply}, {@code handle}, {@code
 * thenCompose}... all make their stages with {@link #newIncompleteFuture}, so they are ring futures
 * too). Waiting on one ({@link #join}, {@link #get}) first <em>helps</em>: the waiting thread takes
 * the connection's response-consumer role and polls the response ring itself for a few tens of
 * microseconds ({@link RingClient#await}), so that a fast answer costs no thread wake-up at all.
 * Only then does it block like any future; the answer then comes through the doorbell and the
 * connection's I/O thread.
 *
 * <p>Completion runs dependent stages on the completing thread: a thread waiting in {@code join}
 * may run the callbacks of another thread's call, as an I/O thread would. Callbacks must not block,
 * as for every fabric future.
 */
class RingFuture<T> extends CompletableFuture<T> {
  final RingClient client;

  /** The kind (service and opcode) of the call this future stems from: how long to help. */
  final int kind;

  RingFuture(RingClient client, int kind) {
    this.client = client;
    this.kind = kind;
  }

  @Override
  public <U> CompletableFuture<U> newIncompleteFuture() {
    return new RingFuture<>(client, kind);
  }

  @Override
  public T join() {
    if (!isDone()) {
      client.await(this, Long.MAX_VALUE);
    }
    return super.join();
  }

  @Override
  public T get() throws InterruptedException, ExecutionException {
    if (!isDone()) {
      client.await(this, Long.MAX_VALUE);
    }
    return super.get();
  }

  @Override
  public T get(long timeout, TimeUnit unit)
      throws InterruptedException, ExecutionException, TimeoutException {
    long nanos = unit.toNanos(timeout);
    if (!isDone()) {
      long start = System.nanoTime();
      client.await(this, nanos);
      nanos -= System.nanoTime() - start;
    }
    return super.get(Math.max(0, nanos), TimeUnit.NANOSECONDS);
  }
}
