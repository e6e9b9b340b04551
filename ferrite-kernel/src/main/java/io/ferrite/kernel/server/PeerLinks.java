package io.ferrite.kernel.server;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerDialer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A memory server's connections to other memory servers, for its services ({@link
 * ServiceContext#peer}): one per server, opened on first use with the server's SERVER-role
 * credentials (the role its master link proves) by {@link ServerDialer}, the master's own dialing
 * code, at the address the master's membership names now: over shm first to a peer that reports
 * this server's host identity (servers of one host), else tcp. A connection that closed (the peer
 * stopped, or re-registered at a new address after a restart) is replaced by a new one dialed from
 * a fresh membership answer. Connecting blocks (one membership RPC and a handshake), under this
 * object's lock: callers are background threads (a tree splitter), never an inline handler.
 */
final class PeerLinks implements AutoCloseable {
  private final List<Fabric> fabrics;
  private final ConnectOptions options;
  private final Supplier<MasterStub> master;

  /** This server's host identity: a peer reporting the same one is dialed over shm first. */
  private final String hostId;

  /** Written under this object's lock; read without it by {@link #open}. */
  private final Map<Integer, FabricConnection> links = new ConcurrentHashMap<>();

  private volatile boolean closed;

  PeerLinks(
      List<Fabric> fabrics, ConnectOptions options, String hostId, Supplier<MasterStub> master) {
    this.fabrics = List.copyOf(fabrics);
    this.options = options;
    this.hostId = hostId;
    this.master = master;
  }

  synchronized FabricConnection get(int serverId) {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "this memory server is stopping");
    }
    FabricConnection c = links.get(serverId);
    if (c != null && c.isOpen()) {
      return c;
    }
    if (c != null) {
      c.close();
      links.remove(serverId);
    }
    MemberInfo member = null;
    for (MemberInfo m : master.get().members()) {
      if (m.serverId() == serverId) {
        member = m;
      }
    }
    c = ServerDialer.open(fabrics, options, hostId, serverId, member);
    links.put(serverId, c);
    return c;
  }

  /**
   * The connection to {@code serverId} if one is open now, else null: never dials, and takes no
   * lock (a thread dialing another server holds this object's), for an inline handler.
   */
  FabricConnection open(int serverId) {
    FabricConnection c = links.get(serverId);
    return c != null && c.isOpen() && !closed ? c : null;
  }

  @Override
  public synchronized void close() {
    closed = true;
    for (FabricConnection c : links.values()) {
      c.close();
    }
    links.clear();
  }
}
