/**
 * Kernel layer, logs: what the master's journal and the faces' operation logs (the kv face's on
 * every memory server, and those of the faces to come) share about files an acknowledgement waits
 * on.
 */
package io.ferrite.kernel.log;
