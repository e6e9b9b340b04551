package io.ferrite.fabric;

/**
 * What a service knows about the caller of an RPC.
 *
 * @param connectionId an id unique per accepted connection on this server, stable for the life of
 *     the connection; lets a service tie state to a client connection
 * @param peer a human-readable description of the peer (address), for logs
 */
public record RpcContext(long connectionId, String peer) {}
