package io.ferrite.memory;

/**
 * A namespace as the master sees it.
 *
 * @param reservedBytes memory reserved for the namespace on the memory servers
 * @param freeBytes reserved memory not bound to an allocation
 * @param allocations live allocations
 * @param mappings open mappings of its allocations, by all clients
 * @param cachedBlocks ready blocks the master keeps for the next reserve of any namespace
 * @param pendingWrites copy-on-write leases in flight (written, not yet published) in it
 * @param lostAllocations allocations whose memory was lost (a region the kernel declared lost, or a
 *     memory server declared DEAD): map answers an error for them; free them
 * @param lostBytes the bytes of those allocations
 */
public record NamespaceStat(
    long reservedBytes,
    long freeBytes,
    int allocations,
    int mappings,
    int cachedBlocks,
    int pendingWrites,
    int lostAllocations,
    long lostBytes) {}
