package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The placement directory of a cluster of several master groups ({@link PlacementProtocol}): which
 * group owns each top-level name. Installed on every master; only group 0's is asked. A placement
 * is journaled like any extension record and never changes, so it is the one fact that makes a name
 * exist in at most one group: two clients creating one new top-level name through different groups
 * both ask here first, and the check-and-record is one mutation under group 0's metadata lock.
 *
 * <p>FIND only reads a concurrent map that {@link #apply} fills, so it is answered inline (and,
 * like every master answer, sent once the journal is durable up to what it may show).
 */
public final class PlacementDirectory implements MasterExtension {
  /** key -> group. Written by {@link #apply} under the metadata lock; read anywhere. */
  private final Map<String, Integer> placements = new ConcurrentHashMap<>();

  private MasterContext ctx;

  @Override
  public int serviceId() {
    return PlacementProtocol.SERVICE;
  }

  @Override
  public String name() {
    return "placement";
  }

  @Override
  public void apply(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "placement record");
    int version = r.u8("version");
    if (version != 1) {
      throw new IllegalStateException("placement record version " + version + " (expected: 1)");
    }
    String key = r.str("key");
    int group = r.i32("group");
    r.end();
    placements.putIfAbsent(key, group);
  }

  @Override
  public List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>(placements.size());
    placements.forEach((k, g) -> out.add(record(k, g)));
    return out;
  }

  private static byte[] record(String key, int group) {
    return new Wire.Writer().u8(1).str(key).i32(group).toArray();
  }

  @Override
  public void start(MasterContext context) {
    this.ctx = context;
  }

  /** How many names are placed (for tests and status). */
  public int size() {
    return placements.size();
  }

  /** The group of {@code key}, or -1. */
  public int find(String key) {
    Integer g = placements.get(key);
    return g == null ? -1 : g;
  }

  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    return opcode == PlacementProtocol.FIND ? handle(caller, opcode, request) : null;
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "placement opcode " + opcode);
    if (opcode == PlacementProtocol.FIND) {
      String key = r.str("key");
      r.end();
      return answer(find(key));
    }
    if (opcode == PlacementProtocol.PLACE) {
      String key = r.str("key");
      int groups = r.i32("groups");
      int preferred = r.i32("preferred");
      r.end();
      if (key.isEmpty() || groups < 1 || preferred < -1 || preferred >= groups) {
        return Futures.failed(
            ErrorCode.INVALID_ARGUMENT,
            "place '"
                + key
                + "' among "
                + groups
                + " group(s), preferred "
                + preferred
                + " (expected: a key, groups >= 1, -1 <= preferred < groups)");
      }
      int group =
          ctx.mutate(
              m -> {
                int have = find(key);
                if (have >= 0) {
                  return have; // placed before: it never moves
                }
                int g = preferred >= 0 ? preferred : PlacementProtocol.choose(key, groups);
                if (heldHere(key)) {
                  g = 0; // made here before the cluster had several groups: it stays here
                }
                m.commit(record(key, g));
                return g;
              });
      return answer(group);
    }
    return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "placement opcode " + opcode);
  }

  /** Whether an extension of this master (group 0's) holds {@code key}'s name unplaced. */
  private boolean heldHere(String key) {
    int colon = key.indexOf(':');
    if (colon < 0) {
      return false;
    }
    String kind = key.substring(0, colon);
    String name = key.substring(colon + 1);
    for (MasterExtension ext : ctx.extensions()) {
      if (ext != this && ext.holdsName(kind, name)) {
        return true;
      }
    }
    return false;
  }

  private static CompletableFuture<ByteBuffer> answer(int group) {
    return CompletableFuture.completedFuture(new Wire.Writer().i32(group).toBuffer());
  }
}
