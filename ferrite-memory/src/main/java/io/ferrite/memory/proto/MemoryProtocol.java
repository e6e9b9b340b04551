package io.ferrite.memory.proto;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.proto.Wire;

/**
 * The memory face's RPC service on the master: opcodes and body layouts. All bodies use the
 * kernel's {@link Wire} encodings (little-endian; {@code str} = u16 length + UTF-8).
 *
 * <pre>
 * op  name          request                                        response
 *  1  CREATE_NS     name str, chunkSize i32 (0 = block size)       nsId i64, chunkSize i32
 *  2  JOIN_NS       name str                                       nsId i64, chunkSize i32
 *  3  DELETE_NS     name str                                       -
 *  4  RESERVE       nsId i64, bytes i64, session i64               reserved i64, cached i32,
 *                                                                  blocks to prepare (zero):
 *                                                                  fresh ones and cached ones
 *                                                                  of other namespaces
 *  5  RELEASE       nsId i64, bytes i64                            reserved i64
 *  6  ALLOC         nsId i64, bytes i64, flags i32                 address i64, length i64
 *  7  FREE          nsId i64, address i64                          -
 *  8  LOOKUP        nsId i64, address i64, length i64              allocAddress i64, allocLength i64
 *  9  MAP           nsId i64, address i64, length i64,             mapId i64, chunkSize i32,
 *                   session i64, flags i32                         firstChunk i64 (index in the
 *                                                                  allocation), generation i64,
 *                                                                  allocFlags i32, regions (count
 *                                                                  i32, per region: server i32,
 *                                                                  region i32, rkey i64, length
 *                                                                  i64), chunks (count i32, per
 *                                                                  chunk: regionIndex i32, offset
 *                                                                  i64), COW metadata chunks (same)
 * 10  UNMAP         mapId i64, session i64                         -
 * 11  STAT          nsId i64                                       reserved i64, freeChunkBytes
 *                                                                  i64, allocations i32, mappings
 *                                                                  i32, cachedBlocks i32,
 *                                                                  pendingWrites i32,
 *                                                                  lostAllocations i32,
 *                                                                  lostBytes i64
 * 12  COW_BEGIN     mapId i64, session i64, firstChunk i32,        leaseId i64, leaseMillis i64,
 *                   count i32                                      regions, fresh chunks (as MAP)
 * 13  COW_PUBLISH   leaseId i64, session i64, mapId i64            generation i64
 * </pre>
 *
 * Errors: {@code NOT_FOUND} (no such namespace, allocation or mapping; an allocation lost with a
 * dead memory server), {@code DATA_LOST} (map or lookup of an allocation with chunks in a region
 * the kernel declared lost, map of one lost for good with a dead server: not retryable, free it),
 * {@code CONFLICT} (a namespace that exists, freeing or deleting what is mapped, releasing
 * allocated memory), {@code NO_SPACE} (alloc beyond the reserve, reserve beyond the cluster),
 * {@code OUT_OF_BOUNDS} (a range outside its allocation), {@code INVALID_ARGUMENT} (bad sizes,
 * names, flags), {@code SESSION_EXPIRED}.
 */
public final class MemoryProtocol {
  private MemoryProtocol() {}

  /** The service id of the memory face on the master. */
  public static final int SERVICE = 20;

  public static final int CREATE_NS = 1;
  public static final int JOIN_NS = 2;
  public static final int DELETE_NS = 3;
  public static final int RESERVE = 4;
  public static final int RELEASE = 5;
  public static final int ALLOC = 6;
  public static final int FREE = 7;
  public static final int LOOKUP = 8;
  public static final int MAP = 9;
  public static final int UNMAP = 10;
  public static final int STAT = 11;
  public static final int COW_BEGIN = 12;
  public static final int COW_PUBLISH = 13;

  /** Longest namespace name, in UTF-8 bytes. */
  public static final int MAX_NAME = 255;

  /** Most chunks one map answer carries (4 GiB of 64 KiB chunks). */
  public static final int MAX_CHUNKS = 1 << 16;

  /** Most regions one map answer names. */
  public static final int MAX_REGIONS = 1 << 16;

  /** Checks a namespace name: 1 to {@value #MAX_NAME} UTF-8 bytes, no control characters. */
  public static String checkName(String name) {
    int bytes = name == null ? 0 : name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    boolean control = name != null && name.chars().anyMatch(Character::isISOControl);
    if (bytes == 0 || bytes > MAX_NAME || control) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "namespace name: "
              + (name == null ? "null" : "'" + name.replaceAll("\\p{Cntrl}", "?") + "'")
              + " (expected: 1 to "
              + MAX_NAME
              + " UTF-8 bytes, no control characters)");
    }
    return name;
  }

  public static void writeRegion(Wire.Writer w, RegionRef r) {
    w.i32(r.serverId()).i32(r.regionId()).i64(r.rkey()).i64(r.length());
  }

  public static RegionRef readRegion(Wire.Reader r) {
    int server = r.i32("serverId");
    int region = r.i32("regionId");
    long rkey = r.i64("rkey");
    long length = r.i64("length");
    if (length < 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "region length: " + length + " (expected: >= 0)");
    }
    return new RegionRef(server, region, rkey, length);
  }
}
