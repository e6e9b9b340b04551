package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;

/**
 * A tree's meganodes as each memory server's STATS reports them (a server that holds none of the
 * tree answers NOT_FOUND): where a spread tree's leaf meganodes are, checked, not assumed.
 */
public final class TreeShape {
  private TreeShape() {}

  /** STATS of tree {@code name} on every server: meganodes per server (0: none there). */
  public static int[] meganodesPerServer(ClusterHarness cluster, TreeClient client, String name) {
    long id = client.info(name).id();
    int[] out = new int[cluster.servers.size()];
    for (int i = 0; i < out.length; i++) {
      long[] s = stats(cluster, cluster.servers.get(i), id);
      out[i] = s == null ? 0 : (int) s[0];
    }
    return out;
  }

  /** How many servers hold at least one meganode of tree {@code name}. */
  public static int serversWithMeganodes(ClusterHarness cluster, TreeClient client, String name) {
    int n = 0;
    for (int m : meganodesPerServer(cluster, client, name)) {
      n += m > 0 ? 1 : 0;
    }
    return n;
  }

  /** STATS of tree {@code id} on {@code server}, or null if it holds none of it. */
  public static long[] stats(ClusterHarness cluster, MemoryServer server, long id) {
    try {
      Wire.Reader r =
          new Wire.Reader(
              cluster
                  .client()
                  .callSync(
                      server.serverId(),
                      TreeProtocol.SERVER_SERVICE,
                      TreeProtocol.STATS,
                      new Wire.Writer().i64(id).toBuffer()),
              "stats");
      return new long[] {
        r.i32("meganodes"), r.i32("levels"), r.i64("splits"), r.i64("used"), r.i64("capacity")
      };
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }
}
