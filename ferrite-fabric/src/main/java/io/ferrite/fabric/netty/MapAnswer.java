package io.ferrite.fabric.netty;

import io.ferrite.fabric.MappedRegion;

/**
 * What a server answers to MAP (shm): the region's length, the absolute path of its file, what the
 * presented key grants, and the region's block key file.
 *
 * @param length the region's length in bytes
 * @param path the region file, to be mapped by the same-host client
 * @param grant what the key presented to MAP grants (never {@link MappedRegion.Grant#NONE})
 * @param keysPath the region's block key file ({@link io.ferrite.fabric.BlockKeys}), "" if none
 */
public record MapAnswer(long length, String path, MappedRegion.Grant grant, String keysPath) {}
