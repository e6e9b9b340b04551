package io.ferrite.fabric.netty;

/**
 * What a server answers to MAP (shm): the region's length and the absolute path of its file.
 *
 * @param length the region's length in bytes
 * @param path the region file, to be mapped by the same-host client
 */
public record MapAnswer(long length, String path) {}
