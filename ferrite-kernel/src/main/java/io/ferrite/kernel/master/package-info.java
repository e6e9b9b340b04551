/**
 * Kernel layer, master: membership and dead-server detection, the region directory, storage classes
 * and block allocation, client sessions with leases, and the journal (log plus snapshot) from which
 * a restarted master recovers. {@link io.ferrite.kernel.master.MasterState} holds the rules; {@link
 * io.ferrite.kernel.master.Master} serves them over any fabric.
 */
package io.ferrite.kernel.master;
