/**
 * What the byte-stream fabrics (tcp, and shm's control socket) share: one Netty pipeline over two
 * transports (TCP, Unix domain sockets), speaking the {@link io.ferrite.fabric.Frames} wire format.
 *
 * <ul>
 *   <li>{@link io.ferrite.fabric.netty.FrameReader}: splits the stream into frames, checking the
 *       length before allocating; bodies are sliced, gathered or streamed, and on the client
 *       back-to-back large READ responses (headers and bodies) are read from the socket straight
 *       into the callers' buffers, one copy as with a raw socket.
 *   <li>Server: {@link io.ferrite.fabric.netty.NettyServer}, one {@code ServerHandler} per
 *       connection (handshake, then dispatch), {@code SoftNic} (one-sided ops on the I/O thread;
 *       large reads sent from the region's mapping with no copy by the JVM) and {@code
 *       RpcDispatcher} (inline, or its {@code DispatchThreads}; answers written by the answering
 *       thread through {@code ServerWriter}). The small responses of one read burst are gathered
 *       into one buffer ({@code ResponseBuffer}) and flushed once.
 *   <li>Client: {@link io.ferrite.fabric.netty.NettyConnection} (in-flight bound, {@code
 *       InFlight}), {@code ClientWriter} (callers encode and write frames to the socket themselves
 *       under a combining write lock, through a duplicated descriptor, {@code FdDup}; the frames of
 *       one write share a buffer, large payloads go from the caller's buffer; the event loop takes
 *       over while the socket is full), {@code ClientHandler} (handshake, pending table, timeouts;
 *       event-loop confined, fed by a registration queue) and the per-op classes {@code RegionOps}
 *       and {@code CallOps}. Synchronous small reads ({@code readSync}, {@code Batch.flushSync})
 *       take a blocking lane when they may ({@code Lane}, {@code Lanes}: a second socket per
 *       calling thread, bounded, authenticated, closed with the connection): the caller writes its
 *       request and reads the answer itself, with no event-loop hand-off.
 *   <li>TLS (tcp only): {@link io.ferrite.fabric.netty.Tls} puts Netty's {@code SslHandler} first
 *       in the pipeline, binds the handshake's proofs to the server certificate, and decides in one
 *       place that the paths beneath the pipeline (direct writes and reads, lanes) are off.
 * </ul>
 */
package io.ferrite.fabric.netty;
