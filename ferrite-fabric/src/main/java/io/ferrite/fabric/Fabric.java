package io.ferrite.fabric;

/**
 * One way of reaching regions and services: shm (same host, the client maps region files), tcp (any
 * host, Netty) or local (in-JVM, with fault injection). A fabric instance owns its threads (event
 * loops); closing it closes every server and connection it made.
 */
public interface Fabric extends AutoCloseable {
  /** "shm", "tcp" or "local". */
  String name();

  /** Starts serving {@code spec}; returns once the endpoint accepts connections. */
  FabricServer serve(ServerSpec spec);

  /**
   * Connects to the endpoint at {@code address} and completes the authenticated handshake.
   *
   * @throws FerriteException {@link ErrorCode#UNAVAILABLE} if nothing answers, {@link
   *     ErrorCode#AUTH_FAILED} if either side fails the challenge, {@link ErrorCode#UNSUPPORTED} if
   *     the address is not one of this fabric's
   */
  FabricConnection connect(String address, ConnectOptions options);

  @Override
  void close();
}
