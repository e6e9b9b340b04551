package io.ferrite.fabric.netty;

import io.ferrite.fabric.RpcContext;

/**
 * What a byte-stream endpoint needs from a transport of RPCs beside its socket: the shm fabric's
 * shared-memory rings. The endpoint answers the RINGS and DOORBELL frames of authenticated
 * connections through it and tells it when a connection ends; an endpoint without one (tcp) treats
 * either frame as a protocol error.
 */
public interface RingHost {
  /**
   * A connection asked for rings: creates them and returns the path of the file that holds them,
   * for the client to map. Called on the connection's I/O thread.
   *
   * @throws io.ferrite.fabric.FerriteException why no rings can be had; the connection goes on
   *     without them (its RPCs stay on the socket)
   */
  String open(RingPeer peer);

  /** The client of {@code connectionId} rang: it wrote requests while the poller slept. */
  void doorbell(long connectionId);

  /** The connection ended (closed by either side, or lost): its rings go too. */
  void closed(long connectionId);

  /** The endpoint is closing: stop polling, release every ring. */
  void shutdown();

  /** The connection a ring pair belongs to, as the ring side sees it. */
  interface RingPeer {
    /** The caller identity of the connection's RPCs, the same on the socket and on the rings. */
    RpcContext context();

    /** Sends a DOORBELL frame to the client (any thread). */
    void ringDoorbell();

    /** Closes the connection, logging {@code reason} (a malformed ring record, say). */
    void close(String reason);
  }
}
