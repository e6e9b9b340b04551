/**
 * Kernel layer, logs: the faces' operation log ({@link io.ferrite.kernel.log.OpLog}: kv's, the
 * tree's and the tx face's on every memory server) and what it shares with the master's journal
 * about files an acknowledgement waits on.
 */
package io.ferrite.kernel.log;
