package io.ferrite.kernel.proto;

import io.ferrite.fabric.verify.Checksum64;
import java.nio.charset.StandardCharsets;

/**
 * The placement directory of a cluster of several master groups: which group owns a top-level name
 * (a nodes face's top-level name, a kv table, a memory namespace, a tree). Served by {@code
 * PlacementDirectory} on every master, used on group 0 only; clients reach it through {@link
 * io.ferrite.kernel.client.MasterGroups}.
 *
 * <p>A placement is made once, by group 0 under its metadata lock, journaled, and never changed: a
 * name stays in the group that first placed it, whatever groups are added later, so a client may
 * cache it forever (there is nothing to invalidate) and two clients placing one new name get one
 * group. Which group a NEW name gets is {@link #choose}: rendezvous hashing over the groups the
 * asking client knows.
 *
 * <pre>
 * FIND  (1)  request: key str                                   answer: group i32 (-1: none)
 * PLACE (2)  request: key str | groups i32 | preferred i32 (-1)  answer: group i32
 * record:    version u8 (1) | key str | group i32
 * </pre>
 *
 * A key is {@code <kind>:<name>}, e.g. {@code nodes:data} for the nodes face's {@code /data},
 * {@code kv:users} for kv table {@code users}, {@code memory:graph} for memory namespace {@code
 * graph}, {@code tree:index} for tree {@code index}.
 */
public final class PlacementProtocol {
  private PlacementProtocol() {}

  /** The directory's service id on the master (an extension's: 16 and up). */
  public static final int SERVICE = 18;

  public static final int FIND = 1;
  public static final int PLACE = 2;

  /** The kind of the nodes face's top-level names. */
  public static final String NODES = "nodes";

  /** The kind of the kv face's table names. */
  public static final String KV = "kv";

  /** The kind of the memory face's namespace names. */
  public static final String MEMORY = "memory";

  /** The kind of the tree face's tree names. */
  public static final String TREE = "tree";

  /** The directory key of {@code name} of {@code kind}. */
  public static String key(String kind, String name) {
    return kind + ":" + name;
  }

  /**
   * The group a new {@code key} goes to among {@code groups}: the one with the highest hash of
   * (key, group), so names spread evenly and a group added later takes about its share of new names
   * while every other new name would have gone where it goes now (rendezvous hashing). Only new
   * names are placed this way; an existing placement never moves.
   */
  public static int choose(String key, int groups) {
    if (groups < 1) {
      throw new IllegalArgumentException("groups: " + groups + " (expected: >= 1)");
    }
    byte[] b = key.getBytes(StandardCharsets.UTF_8);
    long h = Checksum64.of(b);
    int best = 0;
    long bestScore = Long.MIN_VALUE;
    for (int g = 0; g < groups; g++) {
      long score = mix(h + 0x9E3779B97F4A7C15L * (g + 1));
      if (score > bestScore) {
        bestScore = score;
        best = g;
      }
    }
    return best;
  }

  /** SplitMix64's finaliser: every input bit reaches every output bit. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
