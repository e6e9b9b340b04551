package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxFunction;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Function shipping at a primary ({@link TxFunction}): runs a named function in a local transaction
 * and commits it with the service's single-server commit, again on a conflict.
 */
final class Shipping {
  /** Attempts of one shipped call before it answers the last conflict as its abort. */
  static final int ATTEMPTS = 32;

  /** Local reads of a locked or torn object before the attempt gives up (LOCKED). */
  private static final int READ_TRIES = 256;

  /** What a call answers: the commit status and the function's output. */
  record Outcome(int status, byte[] output) {}

  private final TxService service;
  private final ScheduledExecutorService scheduler;
  private final Map<String, TxFunction> functions = new HashMap<>();

  Shipping(TxService service, ScheduledExecutorService scheduler, ClassLoader loader) {
    this.service = service;
    this.scheduler = scheduler;
    for (TxFunction f : ServiceLoader.load(TxFunction.class, loader)) {
      TxFunction had = functions.putIfAbsent(f.name(), f);
      if (had != null && had.getClass() != f.getClass()) {
        throw new IllegalStateException(
            "two tx functions named "
                + f.name()
                + ": "
                + had.getClass().getName()
                + " and "
                + f.getClass().getName());
      }
    }
  }

  /** The names of the installed functions, sorted (errors, tests). */
  List<String> names() {
    return functions.keySet().stream().sorted().toList();
  }

  CompletableFuture<Outcome> run(String name, FatPointer address, byte[] argument) {
    TxFunction f = functions.get(name);
    if (f == null) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "tx function '"
              + name
              + "' is not installed on this memory server (installed: "
              + (functions.isEmpty() ? "none" : String.join(", ", names()))
              + "; functions are found with ServiceLoader, META-INF/services/"
              + TxFunction.class.getName()
              + ")");
    }
    service.region(address.region()).check(address); // MOVED here: the client's map is stale
    return attempt(f, address, argument, 0, TxProtocol.LOCKED);
  }

  /**
   * Attempt {@code n}: runs the function and commits what it did. Nothing here waits: the commit's
   * forwards to the backups complete the future (server-to-server calls never block a service
   * thread, docs/TX.md), and a retry after a conflict runs later on the service's scheduler.
   */
  private CompletableFuture<Outcome> attempt(
      TxFunction f, FatPointer address, byte[] argument, int n, int last) {
    if (n >= ATTEMPTS) {
      return CompletableFuture.completedFuture(new Outcome(last, new byte[0]));
    }
    Local tx = new Local(address);
    byte[] out;
    try {
      out = f.apply(tx, address, argument);
    } catch (RuntimeException e) {
      tx.freeAllocated();
      if (e instanceof Retry) {
        return later(n, () -> attempt(f, address, argument, n + 1, TxProtocol.LOCKED));
      }
      if (e instanceof FerriteException fe) {
        return CompletableFuture.failedFuture(fe);
      }
      return CompletableFuture.failedFuture(
          new FerriteException(
              ErrorCode.INVALID_ARGUMENT, "tx function '" + f.name() + "' failed: " + e, e));
    }
    byte[] output = out == null ? new byte[0] : out;
    return tx.commit()
        .thenCompose(
            st -> {
              if (st == TxProtocol.OK) {
                return CompletableFuture.completedFuture(new Outcome(TxProtocol.OK, output));
              }
              tx.freeAllocated();
              return later(n, () -> attempt(f, address, argument, n + 1, st));
            });
  }

  /**
   * Runs {@code next} on the scheduler after a backoff that grows with {@code n} (1 us to 0.5 ms).
   */
  private CompletableFuture<Outcome> later(int n, Supplier<CompletableFuture<Outcome>> next) {
    long delay = Math.min(500_000L, 1_000L << Math.min(n, 9));
    CompletableFuture<Outcome> result = new CompletableFuture<>();
    try {
      scheduler.schedule(
          () -> {
            try {
              next.get().whenComplete((o, e) -> complete(result, o, e));
            } catch (RuntimeException e) {
              result.completeExceptionally(e);
            }
          },
          delay,
          TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      result.completeExceptionally(
          new FerriteException(ErrorCode.UNAVAILABLE, "tx: the memory server is stopping", e));
    }
    return result;
  }

  private static void complete(CompletableFuture<Outcome> result, Outcome o, Throwable e) {
    if (e == null) {
      result.complete(o);
    } else {
      result.completeExceptionally(FerriteException.unwrap(e));
    }
  }

  /** An attempt found an object locked (by a two-phase commit in flight): try again. */
  private static final class Retry extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Retry() {
      super(null, null, false, false);
    }
  }

  /** One attempt's transaction. */
  private final class Local implements TxFunction.LocalTx {
    private final FatPointer address;
    private final Map<FatPointer, Long> versions = new LinkedHashMap<>();
    private final Map<FatPointer, TxService.Write> writes = new LinkedHashMap<>();
    private final List<FatPointer> allocated = new ArrayList<>();

    Local(FatPointer address) {
      this.address = address;
    }

    private TxRegion local(FatPointer p) {
      TxRegion r;
      try {
        r = service.region(p.region());
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.MOVED || p.region() == address.region()) {
          throw e;
        }
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "a shipped function touches only objects of its primary, the server of "
                + address
                + ": "
                + e.getMessage(),
            e);
      }
      r.check(p);
      return r;
    }

    @Override
    public byte[] read(FatPointer p) {
      TxService.Write w = writes.get(p);
      if (w != null) {
        if (w.kind() == TxProtocol.KIND_FREE) {
          throw TxClient.freed(p);
        }
        return w.value().clone();
      }
      TxRegion r = local(p);
      int lines = ObjectLayout.lines(p.size());
      ByteBuffer copy = ByteBuffer.allocate(lines * ObjectLayout.LINE);
      for (int i = 0; i < READ_TRIES; i++) {
        r.memory().readInto(p.offset(), copy.clear());
        long v = ObjectLayout.verify(copy.clear(), lines, p.incarnation());
        if (v == ObjectLayout.FREED) {
          throw TxClient.freed(p);
        }
        if (v >= 0) {
          Long had = versions.putIfAbsent(p, v);
          if (had != null && had != v) {
            throw new Retry(); // changed between two reads of this attempt
          }
          return ObjectLayout.payload(copy, p.size());
        }
        Thread.onSpinWait();
      }
      throw new Retry();
    }

    @Override
    public void write(FatPointer p, byte[] value) {
      if (value.length > p.size()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "tx write of " + value.length + " bytes to " + p + " (expected: <= " + p.size() + ")");
      }
      read(p); // the version LOCK checks
      writes.put(p, new TxService.Write(p, versions.get(p), TxProtocol.KIND_WRITE, value.clone()));
    }

    @Override
    public void free(FatPointer p) {
      read(p);
      writes.put(p, new TxService.Write(p, versions.get(p), TxProtocol.KIND_FREE, new byte[0]));
    }

    @Override
    public FatPointer alloc(int size) {
      TxRegion r = local(address);
      long[] slot = r.allocate(size);
      FatPointer p = new FatPointer(address.region(), slot[0], size, slot[1]);
      allocated.add(p);
      long version = slot[2];
      versions.put(p, version);
      writes.put(p, new TxService.Write(p, version, TxProtocol.KIND_WRITE, new byte[0]));
      return p;
    }

    CompletableFuture<Integer> commit() {
      List<TxService.Write> ws = new ArrayList<>(writes.values());
      List<FatPointer> reads = new ArrayList<>();
      List<Long> vs = new ArrayList<>();
      versions.forEach(
          (p, v) -> {
            if (!writes.containsKey(p)) {
              reads.add(p);
              vs.add(v);
            }
          });
      if (ws.isEmpty()) {
        for (int i = 0; i < reads.size(); i++) {
          if (!service.region(reads.get(i).region()).holds(reads.get(i), vs.get(i))) {
            return CompletableFuture.completedFuture(TxProtocol.CHANGED);
          }
        }
        return CompletableFuture.completedFuture(TxProtocol.OK);
      }
      return service
          .commitLocal(ws, reads, vs)
          .thenApply(
              answer -> {
                int st = answer.get(answer.position()) & 0xff;
                if (st == TxProtocol.OK) {
                  allocated.clear();
                }
                return st;
              });
    }

    /** Frees what this attempt allocated (it did not commit): lock and free, locally. */
    void freeAllocated() {
      for (FatPointer p : allocated) {
        TxRegion r = service.region(p.region());
        long v = versions.get(p);
        if (r.lock(p, v) == TxProtocol.OK) {
          r.apply(p, v, true, new byte[0]);
        }
      }
      allocated.clear();
    }
  }
}
