/**
 * Kernel layer, wire: the master's RPC protocol ({@link io.ferrite.kernel.proto.MasterProtocol},
 * layouts documented there), its little-endian codecs and the value types that master, memory
 * servers and clients share.
 */
package io.ferrite.kernel.proto;
