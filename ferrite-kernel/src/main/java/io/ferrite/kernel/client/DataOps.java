package io.ferrite.kernel.client;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.proto.BlockRef;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A client's data path: one-sided ops on blocks (bounds-checked against the block, split into
 * frame-sized ops), RPCs to services on memory servers, and batches, each on the shared connection
 * to the block's server ({@link Connections}).
 *
 * <p>Only what is safe to repeat is retried ({@link Retry}): reads, and the reads of a
 * self-verifying read. Writes, atomics and RPCs are not (a lost answer does not mean the op did not
 * happen). A connection that fails with {@link ErrorCode#UNAVAILABLE} is dropped and the next op
 * reconnects.
 *
 * <p>An op waits for the connect of its server on the caller's thread, so that ops one thread
 * issues take effect in issue order; a retry, which runs on the retry thread, composes on the
 * connect instead (that thread must never wait on the network).
 */
final class DataOps {
  /**
   * The largest payload of one op: fabrics bound frames ({@link
   * io.ferrite.fabric.ServerSpec#DEFAULT_MAX_FRAME}), so a longer read or write is sent as several
   * ops on consecutive slices (not atomic as a whole; no read or write is).
   */
  static final int MAX_OP_BYTES = 4 << 20;

  /** Attempts of {@link #readVerified} before it reports a persistent mismatch. */
  static final int VERIFY_ATTEMPTS = 16;

  private final Connections connections;
  private final Retry retry;
  private final Duration rpcTimeout;

  DataOps(Connections connections, Retry retry, Duration rpcTimeout) {
    this.connections = connections;
    this.retry = retry;
    this.rpcTimeout = rpcTimeout;
  }

  private static void checkRange(BlockRef block, long offset, long length) {
    if (offset < 0 || length < 0 || offset > block.length() - length) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "offset: "
              + offset
              + ", length: "
              + length
              + " (expected: 0 <= offset and offset + length <= "
              + block.length()
              + " in "
              + block
              + ")");
    }
  }

  CompletableFuture<Void> read(BlockRef block, long offset, ByteBuffer dst) {
    checkRange(block, offset, dst.remaining());
    return chunked(
        dst,
        (slice, at) ->
            onServer(
                block.serverId(),
                true,
                c -> c.read(block.region(), block.offset() + offset + at, slice)));
  }

  CompletableFuture<Void> write(BlockRef block, long offset, ByteBuffer src) {
    checkRange(block, offset, src.remaining());
    return chunked(
        src,
        (slice, at) ->
            onServer(
                block.serverId(),
                false,
                c -> c.write(block.region(), block.offset() + offset + at, slice)));
  }

  CompletableFuture<Long> compareAndSwap(BlockRef block, long offset, long expect, long update) {
    checkRange(block, offset, 8);
    return onServer(
        block.serverId(),
        false,
        c -> c.compareAndSwap(block.region(), block.offset() + offset, expect, update));
  }

  CompletableFuture<Long> fetchAndAdd(BlockRef block, long offset, long delta) {
    checkRange(block, offset, 8);
    return onServer(
        block.serverId(),
        false,
        c -> c.fetchAndAdd(block.region(), block.offset() + offset, delta));
  }

  private interface SliceOp {
    CompletableFuture<Void> apply(ByteBuffer slice, long at);
  }

  private static CompletableFuture<Void> chunked(ByteBuffer buf, SliceOp op) {
    int len = buf.remaining();
    if (len <= MAX_OP_BYTES) {
      return op.apply(buf, 0);
    }
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    for (int at = 0; at < len; at += MAX_OP_BYTES) {
      ByteBuffer slice = buf.duplicate();
      slice.position(buf.position() + at).limit(buf.position() + Math.min(len, at + MAX_OP_BYTES));
      parts.add(op.apply(slice, at));
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
  }

  /**
   * A self-verifying read (Pilaf §3.3): see {@link FerriteClient#readVerified}. A mismatch is read
   * again after {@link Retry#verifyBackoffMillis}, up to {@value #VERIFY_ATTEMPTS} reads.
   */
  CompletableFuture<Void> readVerified(BlockRef block, long offset, ByteBuffer dst, long checksum) {
    CompletableFuture<Void> result = new CompletableFuture<>();
    verifiedAttempt(block, offset, dst, checksum, 1, result);
    return result;
  }

  private void verifiedAttempt(
      BlockRef block,
      long offset,
      ByteBuffer dst,
      long checksum,
      int n,
      CompletableFuture<Void> result) {
    CompletableFuture<Void> read;
    try {
      read = read(block, offset, dst);
    } catch (FerriteException e) {
      result.completeExceptionally(e);
      return;
    }
    read.whenComplete(
        (v, t) -> {
          if (t != null) {
            result.completeExceptionally(FerriteException.unwrap(t));
          } else if (Checksum64.of(dst, dst.position(), dst.remaining()) == checksum) {
            result.complete(null);
          } else if (n >= VERIFY_ATTEMPTS || retry.isClosed()) {
            result.completeExceptionally(
                new FerriteException(
                    ErrorCode.CONFLICT,
                    "checksum mismatch after "
                        + n
                        + " reads of "
                        + dst.remaining()
                        + " B at offset "
                        + offset
                        + " of "
                        + block
                        + " (torn by a writer that is not done, or the data changed)"));
          } else {
            retry.later(
                () -> verifiedAttempt(block, offset, dst, checksum, n + 1, result),
                Retry.verifyBackoffMillis(n));
          }
        });
  }

  /**
   * Calls {@code opcode} of a service hosted by memory server {@code serverId}. Not retried.
   *
   * <p>On an open connection the answer is a future of the fabric's own kind, not a plain one: a
   * fabric future may let the thread that waits on it read its answer itself (shm's {@code
   * RingFuture} polls the response ring in {@code join}), and a plain one would make every waiter
   * wait for an I/O thread's wake-up instead (a two-server tx commit, whose LOCKs are in flight
   * together, took 50 us over shm that way).
   */
  CompletableFuture<ByteBuffer> call(int serverId, int service, int opcode, ByteBuffer request) {
    FabricConnection c = connections.openNow(serverId);
    if (c == null) {
      return onServer(serverId, false, conn -> conn.call(service, opcode, request, rpcTimeout));
    }
    CompletableFuture<ByteBuffer> f;
    try {
      f = c.call(service, opcode, request, rpcTimeout);
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(FerriteException.unwrap(e));
    }
    // Of the fabric future's own kind (newIncompleteFuture), completed as onServer completes its
    // result: with the unwrapped FerriteException, the connection dropped on UNAVAILABLE.
    CompletableFuture<ByteBuffer> result = f.newIncompleteFuture();
    f.whenComplete(
        (v, t) -> {
          if (t == null) {
            result.complete(v);
            return;
          }
          FerriteException e = FerriteException.unwrap(t);
          if (e.code() == ErrorCode.UNAVAILABLE) {
            connections.dropped(serverId, c); // the next call reconnects
          }
          result.completeExceptionally(naming(serverId, e));
        });
    return result;
  }

  /** As {@link #call}, blocking, through {@link FabricConnection#callSync}. Not retried. */
  ByteBuffer callSync(int serverId, int service, int opcode, ByteBuffer request) {
    FabricConnection c = connections.connection(serverId);
    try {
      return c.callSync(service, opcode, request, rpcTimeout);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.UNAVAILABLE) {
        // As the asynchronous path does: the next call opens a new connection.
        connections.dropped(serverId, c);
      }
      throw naming(serverId, e);
    }
  }

  Batch batch(int serverId) {
    return connections.connection(serverId).batch();
  }

  /**
   * Runs {@code op} on the connection to {@code serverId}. A connection failure drops the
   * connection; {@code idempotent} ops are then retried with backoff on a new connection.
   */
  private <T> CompletableFuture<T> onServer(
      int serverId, boolean idempotent, Function<FabricConnection, CompletableFuture<T>> op) {
    CompletableFuture<T> result = new CompletableFuture<>();
    attempt(serverId, idempotent, op, 1, result);
    return result;
  }

  private <T> void attempt(
      int serverId,
      boolean idempotent,
      Function<FabricConnection, CompletableFuture<T>> op,
      int n,
      CompletableFuture<T> result) {
    CompletableFuture<FabricConnection> conn = connections.connectionAsync(serverId);
    // The caller's thread waits, so that its ops stay in issue order — unless it is the retry
    // timer or a fabric I/O thread (a continuation of a master RPC, say), which must never wait:
    // opening the connection may need the master's members, an answer only that I/O thread reads.
    if (!conn.isDone() && !retry.onRetryThread() && !Futures.onIoThread()) {
      try {
        conn.join();
      } catch (RuntimeException e) {
        // Reported below.
      }
    }
    conn.whenComplete(
        (c, t) -> {
          if (t != null) {
            result.completeExceptionally(naming(serverId, FerriteException.unwrap(t)));
            return;
          }
          CompletableFuture<T> f;
          try {
            f = op.apply(c);
          } catch (RuntimeException e) {
            result.completeExceptionally(FerriteException.unwrap(e));
            return;
          }
          f.whenComplete((v, e) -> ended(serverId, idempotent, op, n, result, c, v, e));
        });
  }

  private <T> void ended(
      int serverId,
      boolean idempotent,
      Function<FabricConnection, CompletableFuture<T>> op,
      int n,
      CompletableFuture<T> result,
      FabricConnection c,
      T value,
      Throwable t) {
    if (t == null) {
      result.complete(value);
      return;
    }
    FerriteException e = FerriteException.unwrap(t);
    if (e.code() == ErrorCode.UNAVAILABLE) {
      connections.dropped(serverId, c);
    }
    if (idempotent && retry.again(n, e)) {
      retry.later(() -> attempt(serverId, idempotent, op, n + 1, result), Retry.backoffMillis(n));
    } else {
      result.completeExceptionally(naming(serverId, e));
    }
  }

  /**
   * A connection's failure (UNAVAILABLE, TIMEOUT) names the memory server it was to, if the
   * fabric's message does not (a fabric knows only an address, say {@code endpoint local://node-2-3
   * is down}): the reader learns which server to look at. Other codes are the server's own answer
   * and pass unchanged.
   */
  static FerriteException naming(int serverId, FerriteException e) {
    if ((e.code() != ErrorCode.UNAVAILABLE && e.code() != ErrorCode.TIMEOUT)
        || e.detail().contains("server " + serverId)) {
      return e;
    }
    return new FerriteException(e.code(), "server " + serverId + ": " + e.detail(), e);
  }
}
