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
 */
public record RpcContext(long connectionId, String peer) {}
