package io.ferrite.kv.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.TableInfo;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * The kv face's master half: the table directory (name -> id, options, server of each shard),
 * journaled with the master's metadata so that it survives master restarts. Shards are placed by
 * consistent hashing: each ALIVE server owns {@value #VNODES} points of a 64-bit ring, and shard
 * {@code i} of a table goes to the owner of the first point at or after {@code hash(table, i)}, so
 * adding a server moves only the shards whose arc it takes over.
 *
 * <p>Records: {@code u8 1, table} (created) and {@code u8 2, str name} (dropped).
 */
public final class KvDirectory implements MasterExtension {
  static final int VNODES = 64;
  private static final int CREATED = 1;
  private static final int DROPPED = 2;

  private final Map<String, TableInfo> tables = new TreeMap<>();
  private final SecureRandom random = new SecureRandom();
  private volatile MasterContext context;

  @Override
  public int serviceId() {
    return KvProtocol.MASTER_SERVICE;
  }

  @Override
  public String name() {
    return "kv";
  }

  @Override
  public void apply(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "kv directory record");
    int type = r.u8("type");
    if (type == CREATED) {
      TableInfo t = TableInfo.read(r);
      tables.put(t.name(), t);
    } else {
      tables.remove(r.str("name"));
    }
  }

  @Override
  public List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>();
    for (TableInfo t : tables.values()) {
      out.add(created(t));
    }
    return out;
  }

  private static byte[] created(TableInfo t) {
    Wire.Writer w = new Wire.Writer().u8(CREATED);
    t.write(w);
    return w.toArray();
  }

  @Override
  public void start(MasterContext ctx) {
    this.context = ctx;
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      return CompletableFuture.completedFuture(dispatch(opcode, request));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private ByteBuffer dispatch(int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "kv directory request " + opcode);
    Wire.Writer w = new Wire.Writer();
    switch (opcode) {
      case KvProtocol.CREATE_TABLE -> {
        String name = checkName(r.str("name"));
        TableOptions o = TableOptions.read(r).validate();
        r.end();
        long id = random.nextLong();
        TableInfo t =
            context.mutate(
                m -> {
                  TableInfo old = tables.get(name);
                  if (old != null) {
                    if (!old.options().equals(o)) {
                      throw new FerriteException(
                          ErrorCode.CONFLICT,
                          "table " + name + " exists with other options: " + old.options());
                    }
                    return old;
                  }
                  TableInfo nt = new TableInfo(name, id, o, place(name, o.shards(), m.members()));
                  m.commit(created(nt));
                  return nt;
                });
        t.write(w);
      }
      case KvProtocol.GET_TABLE -> {
        String name = r.str("name");
        r.end();
        TableInfo t = context.mutate(m -> tables.get(name));
        if (t == null) {
          throw new FerriteException(ErrorCode.NOT_FOUND, "no kv table " + name);
        }
        t.write(w);
      }
      case KvProtocol.LIST_TABLES -> {
        r.end();
        List<TableInfo> all = context.mutate(m -> List.copyOf(tables.values()));
        w.i32(all.size());
        for (TableInfo t : all) {
          t.write(w);
        }
      }
      case KvProtocol.DROP_TABLE -> {
        String name = r.str("name");
        r.end();
        boolean found =
            context.mutate(
                m -> {
                  if (!tables.containsKey(name)) {
                    return false;
                  }
                  m.commit(new Wire.Writer().u8(DROPPED).str(name).toArray());
                  return true;
                });
        if (!found) {
          throw new FerriteException(ErrorCode.NOT_FOUND, "no kv table " + name);
        }
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "kv directory has no opcode " + opcode);
    }
    return w.toBuffer();
  }

  private static String checkName(String name) {
    if (name.isEmpty() || name.length() > 200 || name.chars().anyMatch(c -> c < 0x21 || c == '/')) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "table name: '" + name + "' (expected: 1 to 200 printable characters, no '/' or spaces)");
    }
    return name;
  }

  /** Consistent hashing of the table's shards onto the ring of ALIVE servers. */
  static int[] place(String table, int shards, List<MemberInfo> members) {
    TreeMap<Long, Integer> ring = new TreeMap<>();
    for (MemberInfo m : members) {
      if (m.state() == ServerState.ALIVE) {
        for (int v = 0; v < VNODES; v++) {
          ring.put(hash("server-" + m.serverId() + "#" + v), m.serverId());
        }
      }
    }
    if (ring.isEmpty()) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "no ALIVE memory server to place a kv table on");
    }
    int[] out = new int[shards];
    for (int i = 0; i < shards; i++) {
      Map.Entry<Long, Integer> e = ring.ceilingEntry(hash(table + "#" + i));
      out[i] = (e != null ? e : ring.firstEntry()).getValue();
    }
    return out;
  }

  private static long hash(String s) {
    return io.ferrite.fabric.verify.Checksum64.of(
        s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }
}
