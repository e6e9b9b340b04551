/**
 * What the byte-stream fabrics (tcp, and shm's control socket) share: one Netty pipeline over two
 * transports (TCP, Unix domain sockets), speaking the {@link io.ferrite.fabric.Frames} wire format.
 *
 * <ul>
 *   <li>{@link io.ferrite.fabric.netty.FrameReader}: splits the stream into frames, checking the
 *       length before allocating; bodies are sliced, gathered or streamed.
 *   <li>Server: {@link io.ferrite.fabric.netty.NettyServer}, one {@code ServerHandler} per
 *       connection (handshake, then dispatch), {@code SoftNic} (one-sided ops on the I/O thread)
 *       and {@code RpcDispatcher} (bounded service executor).
 *   <li>Client: {@link io.ferrite.fabric.netty.NettyConnection} (lock-free submission queue, one
 *       drain and one flush per burst), {@code ClientHandler} (handshake, pending table, timeouts;
 *       event-loop confined) and the per-op classes {@code RegionOps} and {@code CallOps}.
 * </ul>
 */
package io.ferrite.fabric.netty;
