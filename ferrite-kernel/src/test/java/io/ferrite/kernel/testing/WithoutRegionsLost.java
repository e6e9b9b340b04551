package io.ferrite.kernel.testing;

import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A face's master half as it was before {@link MasterExtension#regionsLost} existed: everything is
 * forwarded to {@code face} except that callback, so a test can write the journal such a master
 * wrote (stale references into lost memory) and show that the face repairs it at start.
 *
 * <p>With {@code serverDeadToo}, {@link MasterExtension#serverDead} is dropped as well: a master of
 * then never declared a cleanly stopped server DEAD (there was no goodbye, LEAVE), so a server
 * restarted within the dead timeout reached the face only through its registration. A test that
 * restarts a server cleanly needs it to write that master's journal.
 */
public record WithoutRegionsLost(MasterExtension face, boolean serverDeadToo)
    implements MasterExtension {
  /** Drops {@code regionsLost} only. */
  public WithoutRegionsLost(MasterExtension face) {
    this(face, false);
  }

  @Override
  public int serviceId() {
    return face.serviceId();
  }

  @Override
  public String name() {
    return face.name();
  }

  @Override
  public void apply(ByteBuffer record) {
    face.apply(record);
  }

  @Override
  public List<byte[]> snapshot() {
    return face.snapshot();
  }

  @Override
  public void start(MasterContext context) {
    face.start(context);
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    return face.handle(caller, opcode, request);
  }

  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    return face.handleInline(caller, opcode, request);
  }

  @Override
  public void sessionClosed(long sessionId, MasterContext.Mutation m) {
    face.sessionClosed(sessionId, m);
  }

  @Override
  public void serverDead(int serverId, MasterContext.Mutation m) {
    if (!serverDeadToo) {
      face.serverDead(serverId, m);
    }
  }

  @Override
  public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation m) {
    face.serverRegistered(serverId, incarnation, m);
  }

  @Override
  public Map<String, Object> describe() {
    return face.describe();
  }

  @Override
  public void stop() {
    face.stop();
  }
}
