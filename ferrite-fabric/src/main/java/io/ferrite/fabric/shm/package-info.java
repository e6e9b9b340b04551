/**
 * The shm fabric: same-host clients map region files and access them with no work by the server's
 * CPU; a Unix domain socket carries the handshake and MAP, and RPCs go through shared-memory rings
 * (see {@link io.ferrite.fabric.shm.ShmFabric}).
 *
 * <ul>
 *   <li>{@code RingFile}: one connection's file of two Agrona rings and the sleep flags;
 *   <li>{@code RingRecords}: the request and response records;
 *   <li>{@code RingServer} and {@code ServerRings}: the endpoint's ring poller and each
 *       connection's server side;
 *   <li>{@code RingClient} and {@code RingFuture}: the client side, whose waiting threads poll the
 *       response ring themselves.
 * </ul>
 */
package io.ferrite.fabric.shm;
