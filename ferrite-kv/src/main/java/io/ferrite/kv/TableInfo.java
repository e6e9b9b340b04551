package io.ferrite.kv;

import io.ferrite.kernel.proto.Wire;

/**
 * A table as the directory knows it: its name, a unique id (a table dropped and created again gets
 * a new one), its options and the memory server of each shard.
 */
public record TableInfo(String name, long tableId, TableOptions options, int[] servers) {
  public void write(Wire.Writer w) {
    w.str(name).i64(tableId);
    options.write(w);
    for (int s : servers) {
      w.i32(s);
    }
  }

  public static TableInfo read(Wire.Reader r) {
    String name = r.str("name");
    long id = r.i64("tableId");
    TableOptions o = TableOptions.read(r);
    int[] servers = new int[o.shards()];
    for (int i = 0; i < servers.length; i++) {
      servers[i] = r.i32("server");
    }
    return new TableInfo(name, id, o, servers);
  }

  public byte[] toBytes() {
    Wire.Writer w = new Wire.Writer();
    write(w);
    return w.toArray();
  }
}
