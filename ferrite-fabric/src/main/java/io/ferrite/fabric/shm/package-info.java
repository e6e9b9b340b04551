/**
 * The shm fabric: same-host clients map region files and access them with no work by the server's
 * CPU; a Unix domain socket carries the handshake, MAP and RPCs (see {@link
 * io.ferrite.fabric.shm.ShmFabric}).
 */
package io.ferrite.fabric.shm;
