package io.ferrite.tree.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.Permissions;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.tree.TreeProtocol;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The tree face's master extension: the directory of trees (name → id, the server that holds the
 * tree's meganodes, the root meganode pointer), journaled like the kv directory's tables. Records:
 *
 * <pre>
 *  CREATED  u8 1, str name, i64 id, i32 server
 *  ROOT     u8 2, i64 id, i64 root
 *  DROPPED  u8 3, str name
 * </pre>
 *
 * The root pointer here is a hint kept fresh by the tree's server (SET_ROOT after a root split): a
 * client that starts from an older root still finds every key, by the right links of the B-link
 * tree of meganodes (Cell §2.2), only through more meganodes.
 *
 * <p>With several master groups (docs/RESILIENCE.md, "Master groups") each group's directory holds
 * the trees whose names ({@code tree:<name>}) group 0's placement directory placed in it; clients
 * send each call about a tree to its group ({@code TreeClient}), and a group that does not hold a
 * name answers NOT_FOUND for it (GET_TREE) as for a name that exists nowhere.
 */
public final class TreeDirectory implements MasterExtension {
  /** A tree as the directory knows it. */
  record TreeInfo(String name, long id, int server, long root) {}

  private final Map<String, TreeInfo> trees = new LinkedHashMap<>();
  private final Map<Long, String> names = new HashMap<>();
  private final SecureRandom random = new SecureRandom();
  private MasterContext context;

  /** For {@link java.util.ServiceLoader}. */
  public TreeDirectory() {}

  @Override
  public int serviceId() {
    return TreeProtocol.MASTER_SERVICE;
  }

  @Override
  public String name() {
    return "tree";
  }

  /**
   * A tree of this directory (asked by group 0's placement directory under the metadata lock, the
   * lock that guards {@link #trees}): a tree made before the cluster had several master groups
   * stays in group 0 (docs/RESILIENCE.md, "Master groups").
   */
  @Override
  public boolean holdsName(String kind, String name) {
    return kind.equals(PlacementProtocol.TREE) && trees.containsKey(name);
  }

  @Override
  public void apply(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "tree record");
    switch (r.u8("type")) {
      case 1 -> {
        String name = r.str("name");
        long id = r.i64("id");
        int server = r.i32("server");
        trees.put(name, new TreeInfo(name, id, server, 0));
        names.put(id, name);
      }
      case 2 -> {
        long id = r.i64("id");
        long root = r.i64("root");
        String name = names.get(id);
        if (name != null) {
          TreeInfo t = trees.get(name);
          trees.put(name, new TreeInfo(name, id, t.server(), root));
        }
      }
      case 3 -> {
        TreeInfo t = trees.remove(r.str("name"));
        if (t != null) {
          names.remove(t.id());
        }
      }
      default -> {
        // A record of a newer version: ignored, as unknown opcodes are.
      }
    }
  }

  @Override
  public List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>();
    for (TreeInfo t : trees.values()) {
      out.add(created(t.name(), t.id(), t.server()));
      if (t.root() != 0) {
        out.add(root(t.id(), t.root()));
      }
    }
    return out;
  }

  private static byte[] created(String name, long id, int server) {
    return new Wire.Writer().u8(1).str(name).i64(id).i32(server).toArray();
  }

  private static byte[] root(long id, long root) {
    return new Wire.Writer().u8(2).i64(id).i64(root).toArray();
  }

  @Override
  public void start(MasterContext context) {
    this.context = context;
  }

  @Override
  public Map<String, Object> describe() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("trees", trees.size());
    return out;
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      return CompletableFuture.completedFuture(dispatch(caller, opcode, request));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private ByteBuffer dispatch(RpcContext caller, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "tree directory request " + opcode);
    Wire.Writer w = new Wire.Writer();
    switch (opcode) {
      case TreeProtocol.CREATE_TREE -> {
        String name = checkName(r.str("name"));
        r.end();
        long id = random.nextLong() & Long.MAX_VALUE;
        TreeInfo t =
            context.mutate(
                m -> {
                  TreeInfo old = trees.get(name);
                  if (old != null) {
                    return old;
                  }
                  int server = place(name, m.members());
                  m.commit(created(name, id, server));
                  return trees.get(name);
                });
        write(w, t);
      }
      case TreeProtocol.GET_TREE -> {
        String name = r.str("name");
        r.end();
        write(w, context.mutate(m -> found(name)));
      }
      case TreeProtocol.LIST_TREES -> {
        r.end();
        List<TreeInfo> all = context.mutate(m -> List.copyOf(trees.values()));
        w.i32(all.size());
        for (TreeInfo t : all) {
          w.str(t.name());
          write(w, t);
        }
      }
      case TreeProtocol.DROP_TREE_MASTER -> {
        String name = r.str("name");
        r.end();
        boolean dropped =
            context.mutate(
                m -> {
                  if (!trees.containsKey(name)) {
                    return false;
                  }
                  m.commit(new Wire.Writer().u8(3).str(name).toArray());
                  return true;
                });
        w.u8(dropped ? 1 : 0);
      }
      case TreeProtocol.SET_ROOT -> {
        Permissions.require(caller, Role.SERVER, "tree directory SET_ROOT");
        long id = r.i64("id");
        long root = r.i64("root");
        r.end();
        context.mutate(
            m -> {
              if (names.containsKey(id)) {
                m.commit(root(id, root));
              }
              return null;
            });
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "tree directory: unknown opcode " + opcode);
    }
    return w.toBuffer();
  }

  private TreeInfo found(String name) {
    TreeInfo t = trees.get(name);
    if (t == null) {
      // With several master groups, also a name placed in another group: its client asks there.
      throw new FerriteException(
          ErrorCode.NOT_FOUND, "no tree named " + name + " in this master group's directory");
    }
    return t;
  }

  private static void write(Wire.Writer w, TreeInfo t) {
    w.i64(t.id()).i32(t.server()).i64(t.root());
  }

  /**
   * The server for a new tree's meganodes: among the live servers, the one holding the fewest
   * trees, ties broken by id, so trees spread over the cluster.
   */
  private int place(String name, List<MemberInfo> members) {
    Map<Integer, Integer> load = new HashMap<>();
    for (TreeInfo t : trees.values()) {
      load.merge(t.server(), 1, Integer::sum);
    }
    return members.stream()
        .filter(mi -> mi.state() == io.ferrite.kernel.proto.ServerState.ALIVE)
        .min(
            Comparator.<MemberInfo>comparingInt(mi -> load.getOrDefault(mi.serverId(), 0))
                .thenComparingInt(MemberInfo::serverId))
        .map(MemberInfo::serverId)
        .orElseThrow(
            () ->
                new FerriteException(
                    ErrorCode.UNAVAILABLE, "tree " + name + ": no live memory server to hold it"));
  }

  private static String checkName(String name) {
    if (name.isEmpty() || name.length() > 200 || name.chars().anyMatch(c -> c < 0x21 || c == '/')) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "tree name: '" + name + "' (expected: 1 to 200 printable characters, no '/' or spaces)");
    }
    return name;
  }
}
