package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * RStore §III-D: after {@code map}, reads and writes are one-sided ops only, counted by the
 * fabric's {@link Counters}: no RPC to the master or to any memory server, on every fabric; and a
 * read spanning the allocation uses every server (striping).
 */
@ExtendWith({SeedExtension.class, NettyLeakExtension.class})
class PathSeparationTest {
  @TempDir Path dir;
  @AutoClose MemoryCluster cluster;

  private static List<Counters.Snapshot> counters(FerriteClient c, List<Integer> servers) {
    List<Counters.Snapshot> out = new ArrayList<>();
    out.add(c.masterStub().connection().counters().snapshot());
    for (int s : servers) {
      out.add(c.connection(s).counters().snapshot());
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "tcp", "shm"})
  void readsAndWritesMakeNoRpcAndStripeOverEveryServer(String fabric, Random random)
      throws Exception {
    cluster = new MemoryCluster(dir, 3, !fabric.equals("local"));
    // A long lease: no renewal RPC falls into the measured window.
    FerriteClient client =
        cluster.client(
            io.ferrite.kernel.client.ClientOptions.builder(MemoryCluster.CREDENTIALS)
                .fabric(fabric)
                .leaseMillis(60_000));
    RStore store = new RStore(client);
    Namespace ns = store.createNamespace("sep", 16 << 10);
    ns.reserve(6 * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(6 * MemoryCluster.BLOCK, 0);
    Mapping m = ra.map(MemoryFlags.MAP_DEFAULT);
    List<Integer> ids = client.members().stream().map(x -> x.serverId()).toList();
    int servers = ids.size();
    assertEquals(3, servers);
    List<Counters.Snapshot> before = counters(client, ids);

    int size = (int) ra.length();
    ByteBuffer big = NamespaceTest.random(random, size);
    m.writeSync(0, big);
    ByteBuffer back = ByteBuffer.allocateDirect(size);
    m.readSync(0, back);
    assertEquals(big, back);
    ByteBuffer small = ByteBuffer.allocateDirect(8);
    for (int i = 0; i < 100; i++) {
      long off = random.nextInt(size - 8);
      m.writeSync(off, small.clear().putLong(0, off));
      m.readSync(off, small.clear());
      assertEquals(off, small.getLong(0));
    }
    m.buffer().put(0, (byte) 7);
    m.writeFromBuffer(0, 1);
    m.readToBuffer(0, size);

    List<Counters.Snapshot> after = counters(client, ids);
    Counters.Snapshot master = after.get(0).minus(before.get(0));
    assertEquals(0, master.ops(OpKind.RPC), "no RPC to the master on the data path: " + master);
    for (int s = 1; s <= servers; s++) {
      Counters.Snapshot d = after.get(s).minus(before.get(s));
      assertEquals(0, d.ops(OpKind.RPC), "no RPC to server " + s + ": " + d);
      // Striping: each server got a third of every full-range read and write.
      assertTrue(d.bytes(OpKind.READ) >= 2L * size / 3, "server " + s + " reads: " + d);
      assertTrue(d.bytes(OpKind.WRITE) >= size / 3, "server " + s + " writes: " + d);
      assertEquals(0, d.errors(OpKind.READ) + d.errors(OpKind.WRITE), d.toString());
    }
    m.unmap();
  }
}
