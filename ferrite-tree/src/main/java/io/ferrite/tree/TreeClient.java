package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The tree face's client entry point: creates, opens, lists and drops sorted trees through the
 * master's tree directory ({@link TreeProtocol}); each {@link Tree} handle then talks to the memory
 * servers. Thread-safe; shares its {@link FerriteClient}'s connections.
 */
public final class TreeClient {
  private final FerriteClient client;
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

  /** Creates tree {@code name} (or opens it, if it exists) and makes its first meganode. */
  public Tree create(String name) {
    TreeInfo t = read(name, callMaster(TreeProtocol.CREATE_TREE, new Wire.Writer().str(name)));
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

  TreeInfo info(String name) {
    return read(name, callMaster(TreeProtocol.GET_TREE, new Wire.Writer().str(name)));
  }

  /** Every tree in the directory. */
  public List<TreeInfo> list() {
    Wire.Reader r =
        new Wire.Reader(callMaster(TreeProtocol.LIST_TREES, new Wire.Writer()), "tree list");
    int n = r.count("trees", 1 << 20);
    List<TreeInfo> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String name = r.str("name");
      out.add(new TreeInfo(name, r.i64("id"), r.i32("server"), r.i64("root")));
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
            callMaster(TreeProtocol.DROP_TREE_MASTER, new Wire.Writer().str(name)), "tree drop");
    return r.u8("dropped") != 0;
  }

  private ByteBuffer callMaster(int opcode, Wire.Writer w) {
    return client.callMasterSync(TreeProtocol.MASTER_SERVICE, opcode, w.toBuffer());
  }

  private static TreeInfo read(String name, ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "tree info");
    TreeInfo t = new TreeInfo(name, r.i64("id"), r.i32("server"), r.i64("root"));
    r.end();
    return t;
  }
}
