package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.Permissions;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerLoad;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

/**
 * Decodes the master's RPCs ({@link MasterProtocol}), runs them against the {@link MasterState} and
 * encodes the answers. A malformed request fails that call with INVALID_ARGUMENT and nothing else:
 * the master keeps serving.
 *
 * <p>Inline ({@link #handleInline}): MASTER_INFO, and whatever an extension answers inline (the
 * nodes face's lookup). Everything that takes the metadata lock runs on the service executor, since
 * that lock is held across journal writes.
 *
 * <p><b>Acknowledgement after durability.</b> Every answer (kernel or extension, result or error,
 * inline or not) leaves only once the journal is durable up to the LSN that was written when its
 * handler completed: {@link #afterDurable}. That covers the mutation's own record (written under
 * the lock before the handler returned) and every record whose effect the answer may show, a read
 * that sees a create 50 us old included (its apply came after its write, and the read saw the
 * apply): a crash cannot lose a state a client was shown. When nothing is pending (the usual read,
 * and always without fsync) the handler's own future goes out untouched; otherwise the answer is
 * chained on {@link Journal#whenDurable} and sent by the journal thread after its fsync. Nothing
 * here blocks. The one exception is an extension's {@link ProvisionalAnswer} (see there).
 */
final class MasterService implements RpcHandler {
  private static final System.Logger LOG = System.getLogger(MasterService.class.getName());

  private final MasterState state;
  private final Durability journal;

  /** The extensions, fixed before the master serves: read without the metadata lock. */
  private final Map<Integer, MasterExtension> extensions = new HashMap<>();

  private final String hostId;

  /**
   * What the extensions wrote when they started (the nodes face's id jump among it): no {@link
   * ProvisionalAnswer} leaves before it is durable, so a provisional answer never depends on a
   * start record a crash could still take back.
   */
  private final long provisionalFrom;

  private volatile Map<String, String> addresses = Map.of();

  /** Told each server's load a heartbeat carries (the console's rates); null: dropped. */
  private volatile BiConsumer<Integer, ServerLoad> loads;

  /** Sends the revokes a mutation owes before its answer leaves; null: none (tests). */
  private volatile Revoker revoker;

  MasterService(MasterState state, Durability journal, String hostId) {
    this.state = state;
    this.journal = journal;
    this.provisionalFrom = journal.writtenLsn();
    this.hostId = hostId;
    for (MasterExtension ext : state.extensions()) {
      extensions.put(ext.serviceId(), ext);
    }
  }

  /** Sends revokes before answers from now on (the master's, before it serves). */
  void revoker(Revoker r) {
    this.revoker = r;
  }

  /**
   * {@code f}, answered only once the revokes its mutation owes (blocks it freed) reached their
   * servers or failed ({@link Revoker#revokeNow}): a FREE's caller never sees the block reused
   * under a key that still works.
   */
  private CompletableFuture<ByteBuffer> afterRevoked(CompletableFuture<ByteBuffer> f) {
    Revoker r = revoker;
    if (r == null) {
      return f;
    }
    return f.handle((v, e) -> f)
        .thenCompose(
            done -> {
              CompletableFuture<Void> revoked = r.revokeNow();
              return revoked.isDone() ? done : revoked.thenCompose(v -> done);
            });
  }

  /** Where the loads heartbeats carry go from now on (the console's {@code LoadBoard}). */
  void loads(BiConsumer<Integer, ServerLoad> sink) {
    this.loads = sink;
  }

  /** The master's endpoints, once they all listen (MASTER_INFO). */
  void addresses(Map<String, String> byFabric) {
    this.addresses = Map.copyOf(byFabric);
  }

  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    if (service == MasterProtocol.SERVICE) {
      // MASTER_INFO shows the endpoints, nothing journaled: no wait for durability.
      return opcode == MasterProtocol.MASTER_INFO ? dispatchKernel(ctx, opcode, request) : null;
    }
    MasterExtension ext = extensions.get(service);
    if (ext == null) {
      return null;
    }
    RequestScope rs = RequestScope.current();
    CompletableFuture<ByteBuffer> f;
    try {
      f = ext.handleInline(ctx, opcode, request);
    } catch (RuntimeException e) {
      f = extensionFailed(ctx, ext, opcode, e);
    }
    return f == null ? null : afterDurable(remember(rs, f));
  }

  /**
   * {@code f}, whose answer is journaled first when it comes from a call with a request id that
   * committed a mutation ({@link RequestScope}): the record is written before {@link #afterDurable}
   * reads the written LSN, so the one fsync that releases the answer covers it too (no second
   * wait). A completed {@code f} is returned as it is (a {@link ProvisionalAnswer} stays one).
   */
  private CompletableFuture<ByteBuffer> remember(RequestScope rs, CompletableFuture<ByteBuffer> f) {
    if (rs == null) {
      return f;
    }
    if (f.isDone()) {
      journalAnswer(rs, f);
      return f;
    }
    // Asynchronous: the journal cannot wait for this answer, so the call's record is written
    // without it (a crash before the answer's own record leaves the answer UNKNOWN).
    try {
      state.unhold(rs);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "cannot write the record of " + rs, e);
    }
    return f.handle(
            (v, e) -> {
              journalAnswer(rs, f);
              return f;
            })
        .thenCompose(x -> x);
  }

  private void journalAnswer(RequestScope rs, CompletableFuture<ByteBuffer> done) {
    if (!rs.applied()) {
      return; // nothing changed: a retry may run it again
    }
    int status;
    byte[] body;
    try {
      ByteBuffer answer = done.join().duplicate();
      body = new byte[answer.remaining()];
      answer.get(body);
      status = 0;
    } catch (RuntimeException e) {
      FerriteException fe = FerriteException.unwrap(e);
      status = fe.code().wire();
      body = String.valueOf(fe.detail()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    try {
      state.answered(rs, status, body);
    } catch (RuntimeException e) {
      // The journal refused (it stopped after a failed fsync): the answer cannot be made durable
      // either, and a retry is told the call was applied but its answer is not known.
      LOG.log(System.Logger.Level.WARNING, "cannot remember the answer of " + rs, e);
    }
  }

  /**
   * A retry of a call that committed a mutation: its remembered answer (or, if a crash came between
   * the mutation's record and its answer's, an error saying so), once durable.
   */
  CompletableFuture<ByteBuffer> rememberedAnswer(
      MasterProtocol.RequestId id, RememberedAnswers.Answer a) {
    CompletableFuture<ByteBuffer> f;
    if (a.status() == 0) {
      f = CompletableFuture.completedFuture(ByteBuffer.wrap(a.body()));
    } else if (a.status() == RememberedAnswers.UNKNOWN) {
      f =
          Futures.failed(
              ErrorCode.INTERNAL,
              "request "
                  + id.seq()
                  + " of session "
                  + Long.toHexString(id.sessionId())
                  + " was applied, but the master lost its answer before it was journaled (or"
                  + " it was too large to keep): check its effect before repeating it");
    } else {
      f =
          Futures.failed(
              ErrorCode.fromWire(a.status()),
              new String(a.body(), java.nio.charset.StandardCharsets.UTF_8));
    }
    return afterDurable(f);
  }

  /**
   * {@code f}, answered only once the journal is durable up to what was written when {@code f}
   * completed (see the class comment). Never blocks: it chains.
   */
  CompletableFuture<ByteBuffer> afterDurable(CompletableFuture<ByteBuffer> f) {
    if (!f.isDone()) {
      // An asynchronous handler: what its answer may show is known only when it completes.
      return f.handle((r, e) -> f).thenCompose(this::afterDurable);
    }
    // Load written, then durable: if durable >= the written we loaded, every record this answer
    // can reflect is on disk (both only grow).
    long lsn = journal.writtenLsn();
    if (journal.durableLsn() >= lsn) {
      return f;
    }
    return journal.whenDurable(lsn).thenCompose(v -> f);
  }

  private static CompletableFuture<ByteBuffer> extensionFailed(
      RpcContext ctx, MasterExtension ext, int opcode, RuntimeException e) {
    if (e instanceof FerriteException) {
      return CompletableFuture.failedFuture(e);
    }
    LOG.log(
        System.Logger.Level.ERROR,
        "extension " + ext.name() + " opcode " + opcode + " from " + ctx.peer() + " failed",
        e);
    return Futures.failed(ErrorCode.INTERNAL, ext.name() + " opcode " + opcode + ": " + e);
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    if (service != MasterProtocol.SERVICE) {
      MasterExtension ext = extensions.get(service);
      if (ext != null) {
        RequestScope rs = RequestScope.current();
        CompletableFuture<ByteBuffer> f;
        try {
          f = ext.handle(ctx, opcode, request);
        } catch (RuntimeException e) {
          f = extensionFailed(ctx, ext, opcode, e);
        }
        if (f == null) {
          f = Futures.failed(ErrorCode.INTERNAL, ext.name() + " opcode " + opcode + ": no answer");
        }
        // A provisional answer (an invisible, blockless create) leaves at once: the durable
        // mutation that makes its effect real waits for the fsync covering both.
        f = remember(rs, f);
        return f instanceof ProvisionalAnswer && journal.durableLsn() >= provisionalFrom
            ? f
            : afterDurable(afterRevoked(f));
      }
      return Futures.failed(
          ErrorCode.UNKNOWN_SERVICE,
          "service "
              + service
              + " (expected: the master's service "
              + MasterProtocol.SERVICE
              + " or an installed extension's)");
    }
    RequestScope rs = RequestScope.current();
    return afterDurable(afterRevoked(remember(rs, dispatchKernel(ctx, opcode, request))));
  }

  private CompletableFuture<ByteBuffer> dispatchKernel(
      RpcContext ctx, int opcode, ByteBuffer request) {
    try {
      checkRole(ctx, opcode);
      return CompletableFuture.completedFuture(dispatch(ctx, opcode, request));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (IllegalArgumentException e) {
      return Futures.failed(ErrorCode.INVALID_ARGUMENT, String.valueOf(e.getMessage()));
    } catch (RuntimeException e) {
      LOG.log(
          System.Logger.Level.ERROR,
          "master opcode " + opcode + " from " + ctx.peer() + " failed",
          e);
      return Futures.failed(ErrorCode.INTERNAL, "master opcode " + opcode + ": " + e);
    }
  }

  /**
   * Membership opcodes are the servers' (and the operator's): a CLIENT that could REGISTER,
   * HEARTBEAT or REMOVE_REGION could impersonate a server, keep a dead one alive, or unlist a live
   * service region.
   */
  private static void checkRole(RpcContext ctx, int opcode) {
    String name =
        switch (opcode) {
          case MasterProtocol.REGISTER -> "REGISTER";
          case MasterProtocol.HEARTBEAT -> "HEARTBEAT";
          case MasterProtocol.ADD_REGION -> "ADD_REGION";
          case MasterProtocol.REMOVE_REGION -> "REMOVE_REGION";
          case MasterProtocol.LEAVE -> "LEAVE";
          default -> null;
        };
    if (name != null) {
      Permissions.require(ctx, Role.SERVER, "master " + name + " (opcode " + opcode + ")");
    }
  }

  private ByteBuffer dispatch(RpcContext ctx, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "request of opcode " + opcode);
    Wire.Writer w = new Wire.Writer(64);
    switch (opcode) {
      case MasterProtocol.REGISTER -> {
        int id = r.i32("serverId");
        String name = r.str("name");
        String host = r.str("hostId");
        var addresses = MasterProtocol.readAddresses(r);
        int n = r.count("regionCount", MasterProtocol.MAX_LIST);
        List<RegionInfo> regions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          regions.add(MasterProtocol.readRegion(r, id));
        }
        long incarnation = r.remaining() >= 8 ? r.i64("incarnation") : 0;
        r.end();
        int assigned = state.register(id, name, host, addresses, regions, incarnation);
        w.i32(assigned).i64(state.blockSize()).i32(state.heartbeatMillis());
        MasterProtocol.writeGenerations(w, state.generations(assigned));
        // Last (absent from an older master): the server's leases must be shorter than this.
        w.i32((int) Math.min(Integer.MAX_VALUE, state.deadTimeoutMillis()));
      }
      case MasterProtocol.HEARTBEAT -> {
        int id = r.i32("serverId");
        // Servers since #17 append what they served (ServerLoad); older ones send nothing.
        ServerLoad load = r.remaining() > 0 ? ServerLoad.read(r) : null;
        r.end();
        state.heartbeat(id);
        BiConsumer<Integer, ServerLoad> sink = loads;
        if (load != null && sink != null) {
          sink.accept(id, load);
        }
      }
      case MasterProtocol.ADD_REGION -> {
        int id = r.i32("serverId");
        RegionInfo region = MasterProtocol.readRegion(r, id);
        r.end();
        state.addRegion(id, region);
      }
      case MasterProtocol.REMOVE_REGION -> {
        int id = r.i32("serverId");
        int regionId = r.i32("regionId");
        r.end();
        w.u8(state.removeServiceRegion(id, regionId) ? 1 : 0);
      }
      case MasterProtocol.LEAVE -> {
        int id = r.i32("serverId");
        long incarnation = r.i64("incarnation");
        r.end();
        w.u8(state.leave(id, incarnation) ? 1 : 0);
      }
      case MasterProtocol.OPEN_SESSION -> {
        String client = r.str("clientName");
        int lease = r.i32("leaseMillis");
        r.end();
        MasterState.SessionGrant g = state.openSession(client, lease);
        w.i64(g.sessionId()).i32(g.leaseMillis());
      }
      case MasterProtocol.RENEW_SESSION -> {
        long id = r.i64("sessionId");
        r.end();
        w.i32(state.renewSession(id));
      }
      case MasterProtocol.CLOSE_SESSION -> {
        long id = r.i64("sessionId");
        r.end();
        w.i32(state.closeSession(id));
      }
      case MasterProtocol.ALLOCATE -> {
        long session = r.i64("sessionId");
        int count = r.i32("count");
        String cls = r.str("storageClass");
        int flags = r.u8("flags");
        String owner = r.str("owner");
        r.end();
        List<BlockRef> blocks =
            state.allocate(session, count, cls, (flags & MasterProtocol.FLAG_STRICT) != 0, owner);
        MasterProtocol.writeBlocks(w, blocks);
      }
      case MasterProtocol.FREE -> {
        long session = r.i64("sessionId");
        int n = r.count("count", MasterProtocol.MAX_LIST);
        List<int[]> sr = new ArrayList<>();
        List<Long> offs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          sr.add(new int[] {r.i32("serverId"), r.i32("regionId")});
          offs.add(r.i64("offset"));
        }
        r.end();
        w.i32(state.free(session, sr, offs));
      }
      case MasterProtocol.OWNED -> {
        long session = r.i64("sessionId");
        String owner = r.str("owner");
        r.end();
        // Only a live session may list an owner's blocks (and their keys): SESSION_EXPIRED else.
        state.renewSession(session);
        MasterProtocol.writeBlocks(w, state.owned(owner));
      }
      case MasterProtocol.MEMBERS -> {
        r.end();
        List<MemberInfo> members = state.members();
        w.i32(members.size());
        for (MemberInfo m : members) {
          MasterProtocol.writeMember(w, m);
        }
      }
      case MasterProtocol.REGIONS -> {
        int id = r.i32("serverId");
        r.end();
        List<RegionInfo> regions = state.regions(id);
        // Region keys are for servers: a CLIENT sees the directory with every rkey 0 (no key is
        // ever 0), and reaches data through the keys its allocations and faces hand it.
        boolean keys = ctx.role().atLeast(Role.SERVER);
        w.i32(regions.size());
        for (RegionInfo ri : regions) {
          w.i32(ri.ref().serverId());
          MasterProtocol.writeRegion(w, keys ? ri : withoutKey(ri));
        }
      }
      case MasterProtocol.STATUS -> {
        r.end();
        MasterProtocol.writeStatus(w, state.status());
      }
      case MasterProtocol.MASTER_INFO -> {
        r.end();
        w.str(hostId);
        MasterProtocol.writeAddresses(w, addresses);
      }
      default ->
          throw new FerriteException(ErrorCode.UNKNOWN_OPCODE, "master has no opcode " + opcode);
    }
    return w.toBuffer();
  }

  private static RegionInfo withoutKey(RegionInfo ri) {
    RegionRef r = ri.ref();
    return new RegionInfo(
        new RegionRef(r.serverId(), r.regionId(), 0, r.length()), ri.storageClass(), ri.service());
  }
}
