package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.client.MasterGroups;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The tree face's client entry point: creates, opens, lists and drops sorted trees through the
 * master's tree directory ({@link TreeProtocol}); each {@link Tree} handle then talks to the memory
 * servers. Thread-safe; shares its {@link FerriteClient}'s connections.
 *
 * <p>With several master groups (docs/RESILIENCE.md, "Master groups") a tree's directory entry
 * lives in one group, found by its name as kv tables are ({@link MasterGroups#find}/{@link
 * MasterGroups#place}, kind {@link PlacementProtocol#TREE}): every directory call about a tree goes
 * to its group's master ({@link #clientOf}); {@link #list} asks every group. The meganodes' server
 * is chosen by that group's directory; the handle reaches it over this client's connections (a
 * memory server has one id in every group).
 */
public final class TreeClient {
  private final FerriteClient client;
  private final MasterGroups groups;
  private final long cacheBytes;
  private final PathSelector selector;

  /** A client configured by {@code client}'s configuration ({@code tree.cache.*}, selector). */
  public TreeClient(FerriteClient client) {
    this(client, client.config());
  }

  /**
   * A client whose tree handles are configured by {@code config}: {@code tree.cache.bytes} (each
   * handle's caches) and {@code tree.selector.*} (one locality selector shared by its handles,
   * since its estimates are per server, not per tree).
   */
  public TreeClient(FerriteClient client, FerriteConfig config) {
    this.client = client;
    this.groups = client.groups();
    this.cacheBytes = config.getSize(TreeConfig.CACHE_BYTES);
    if (cacheBytes < 0) {
      throw new IllegalArgumentException(
          TreeConfig.CACHE_BYTES + ": " + cacheBytes + " (expected: >= 0)");
    }
    this.selector =
        new PathSelector(
            TreeConfig.selector(config),
            System::nanoTime,
            () -> ThreadLocalRandom.current().nextDouble());
  }

  FerriteClient ferrite() {
    return client;
  }

  long cacheBytes() {
    return cacheBytes;
  }

  /** The locality selector of this client's {@link Tree.Path#AUTO} searches. */
  public PathSelector selector() {
    return selector;
  }

  /** A tree as the directory knows it: its id, its server, its root meganode pointer. */
  public record TreeInfo(String name, long id, int server, long root) {}

  /**
   * Creates tree {@code name} (or opens it, if it exists) and makes its first meganode. With
   * several master groups a new name is placed first (group 0's placement directory), in the group
   * the rule picks.
   */
  public Tree create(String name) {
    TreeInfo t =
        read(name, callMaster(name, true, TreeProtocol.CREATE_TREE, new Wire.Writer().str(name)));
    return new Tree(this, t);
  }

  /**
   * Opens tree {@code name}.
   *
   * @throws FerriteException NOT_FOUND if there is none
   */
  public Tree open(String name) {
    return new Tree(this, info(name));
  }

  /** Tree {@code name} as its group's directory knows it (its root: the directory's hint). */
  TreeInfo info(String name) {
    return read(name, callMaster(name, false, TreeProtocol.GET_TREE, new Wire.Writer().str(name)));
  }

  /**
   * Every tree in the directory: with several master groups, every group's (one LIST_TREES per
   * group), merged in name order; with one group, in the directory's (creation) order.
   *
   * @throws FerriteException UNAVAILABLE if a group's master does not answer
   */
  public List<TreeInfo> list() {
    List<TreeInfo> out = new ArrayList<>();
    for (int g = 0; g < groups.count(); g++) {
      Wire.Reader r =
          new Wire.Reader(
              groups
                  .client(g)
                  .callMasterSync(
                      TreeProtocol.MASTER_SERVICE, TreeProtocol.LIST_TREES, ByteBuffer.allocate(0)),
              "tree list");
      int n = r.count("trees", 1 << 20);
      for (int i = 0; i < n; i++) {
        String name = r.str("name");
        out.add(new TreeInfo(name, r.i64("id"), r.i32("server"), r.i64("root")));
      }
      r.end();
    }
    if (groups.count() > 1) {
      out.sort(Comparator.comparing(TreeInfo::name));
    }
    return out;
  }

  /** Drops tree {@code name}: its meganodes on its server, then its directory entry. */
  public boolean drop(String name) {
    TreeInfo t;
    try {
      t = info(name);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return false;
      }
      throw e;
    }
    client.callSync(
        t.server(),
        TreeProtocol.SERVER_SERVICE,
        TreeProtocol.DROP_TREE,
        new Wire.Writer().i64(t.id()).toBuffer());
    Wire.Reader r =
        new Wire.Reader(
            callMaster(name, false, TreeProtocol.DROP_TREE_MASTER, new Wire.Writer().str(name)),
            "tree drop");
    return r.u8("dropped") != 0;
  }

  /** Calls the directory of the group that holds tree {@code name} ({@link #clientOf}). */
  private ByteBuffer callMaster(String name, boolean place, int opcode, Wire.Writer w) {
    return clientOf(name, place).callMasterSync(TreeProtocol.MASTER_SERVICE, opcode, w.toBuffer());
  }

  /**
   * The client of the master group that holds tree {@code name} ({@link MasterGroups#clientOf},
   * kind {@link PlacementProtocol#TREE}). {@code place}: a create. The group is kept by {@link
   * MasterGroups} for the client's life (a placement never changes), so only a name's first use
   * asks group 0; with one group nothing is asked.
   */
  private FerriteClient clientOf(String name, boolean place) {
    return groups.clientOf(PlacementProtocol.TREE, name, place);
  }

  private static TreeInfo read(String name, ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "tree info");
    TreeInfo t = new TreeInfo(name, r.i64("id"), r.i32("server"), r.i64("root"));
    r.end();
    return t;
  }
}
