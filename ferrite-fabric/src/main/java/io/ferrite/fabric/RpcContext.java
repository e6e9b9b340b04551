package io.ferrite.fabric;

/**
 * What a service knows about the caller of an RPC.
 *
 * @param connectionId an id unique per accepted connection on this server, stable for the life of
 *     the connection; lets a service tie state to a client connection. One client may call over
 *     several connections: a tcp client's synchronous small calls ({@code callSync}) take its
 *     blocking lanes, each a connection of its own, so identify a client by what its requests carry
 *     (a session), not by this id
 * @param peer a human-readable description of the peer (address), for logs
 * @param role the principal the connection's handshake proved; services refuse server-only and
 *     admin opcodes to a {@link Role#CLIENT}
 */
public record RpcContext(long connectionId, String peer, Role role) {
  public RpcContext {
    if (role == null) {
      throw new IllegalArgumentException("role: null (expected: the role the handshake proved)");
    }
  }
}
