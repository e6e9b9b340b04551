package io.ferrite.kernel.master;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.kernel.proto.MasterProtocol;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The master's outermost handler: unwraps a {@link MasterProtocol#REQUEST} (a call carrying a
 * request id) and makes sure that call runs at most once.
 *
 * <ul>
 *   <li>An id whose call changed the metadata is answered what it was answered the first time
 *       ({@link RememberedAnswers}, journaled: also after a master restart), without running.
 *   <li>An id whose first attempt is still running (the client gave up waiting and retried) gets
 *       that attempt's answer: the two never run side by side.
 *   <li>Any other id runs, as the inner call, with its {@link RequestScope} on the thread, so that
 *       the state marks its first mutation and the service journals its answer ({@link
 *       MasterService}).
 * </ul>
 *
 * The inner call is passed on unwrapped to {@code inner}, so the meters count it as itself. Every
 * other call goes to {@code inner} untouched. No lock is taken here: the lookup of a remembered
 * answer reads concurrent maps, so an I/O thread may do it ({@link #handleInline}).
 */
final class RequestIds implements RpcHandler {
  private final RpcHandler inner;

  /** The core being served (its state remembers the answers), or null on a follower. */
  private final java.util.function.Supplier<Master.Core> core;

  /**
   * The calls with an id that are running, by session and sequence number (not by the whole id: a
   * retry may carry a higher ackedBelow): a concurrent retry joins the first attempt.
   */
  private final Map<Key, CompletableFuture<ByteBuffer>> running = new ConcurrentHashMap<>();

  private record Key(long sessionId, long seq) {
    static Key of(MasterProtocol.RequestId id) {
      return new Key(id.sessionId(), id.seq());
    }
  }

  RequestIds(RpcHandler inner, java.util.function.Supplier<Master.Core> core) {
    this.inner = inner;
    this.core = core;
  }

  private static boolean wrapped(int service, int opcode) {
    return service == MasterProtocol.SERVICE && opcode == MasterProtocol.REQUEST;
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    if (!wrapped(service, opcode)) {
      return inner.handle(ctx, service, opcode, request);
    }
    MasterProtocol.Request r;
    try {
      r = MasterProtocol.readRequest(request);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<ByteBuffer> known = known(r.id());
    if (known != null) {
      return known;
    }
    CompletableFuture<ByteBuffer> mine = new CompletableFuture<>();
    CompletableFuture<ByteBuffer> first = running.putIfAbsent(Key.of(r.id()), mine);
    if (first != null) {
      return first;
    }
    // Looked up again now that this attempt holds the id: the first attempt may have finished
    // (and left running) between the lookup above and the putIfAbsent.
    known = known(r.id());
    if (known != null) {
      return finish(r.id(), mine, known);
    }
    CompletableFuture<ByteBuffer> f;
    RequestScope scope = new RequestScope(r.id());
    try {
      f = RequestScope.within(scope, () -> inner.handle(ctx, r.service(), r.opcode(), r.body()));
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    } finally {
      scope.release(); // normally released with its answer already (MasterService)
    }
    return finish(r.id(), mine, f);
  }

  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    if (!wrapped(service, opcode)) {
      return inner.handleInline(ctx, service, opcode, request);
    }
    MasterProtocol.Request r;
    try {
      r = MasterProtocol.readRequest(request);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<ByteBuffer> known = known(r.id());
    if (known != null) {
      return known;
    }
    CompletableFuture<ByteBuffer> first = running.get(Key.of(r.id()));
    if (first != null) {
      return first;
    }
    // Not entered in running: what a face answers inline are lookups (cheap, non-blocking, no
    // mutation); one that does mutate is still marked and remembered through the scope.
    RequestScope scope = new RequestScope(r.id());
    try {
      return RequestScope.within(
          scope, () -> inner.handleInline(ctx, r.service(), r.opcode(), r.body()));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      scope.release();
    }
  }

  /**
   * The remembered answer of {@code id}, or null when its call never changed anything (or no core
   * is served: the call then goes on to the inner handler's NOT_LEADER).
   */
  private CompletableFuture<ByteBuffer> known(MasterProtocol.RequestId id) {
    Master.Core c = core.get();
    if (c == null) {
      return null;
    }
    RememberedAnswers.Answer a = c.state.remembered(id.sessionId(), id.seq());
    return a == null ? null : c.service.rememberedAnswer(id, a);
  }

  /** {@code f}'s outcome through {@code mine}, once the id is no longer running. */
  private CompletableFuture<ByteBuffer> finish(
      MasterProtocol.RequestId id,
      CompletableFuture<ByteBuffer> mine,
      CompletableFuture<ByteBuffer> f) {
    f.whenComplete(
        (v, e) -> {
          // The answer (if the call changed anything) is remembered before f completes, so a retry
          // that finds the id no longer running finds its answer.
          running.remove(Key.of(id), mine);
          if (e != null) {
            mine.completeExceptionally(e);
          } else {
            mine.complete(v);
          }
        });
    return mine;
  }
}
