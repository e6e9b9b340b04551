package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.nodes.master.NodesMaster;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Lost memory (issue #20): a memory server that comes back without its regions (a new process makes
 * new ones) takes the data of the nodes whose blocks were there; the master marks exactly those
 * nodes lost, reads of lost bytes answer DATA_LOST naming the node, the rest keeps serving.
 */
@ExtendWith(SeedExtension.class)
class NodesLostTest {
  static final int BS = 65536;

  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;
  MemoryServer s1;
  MemoryServer s2;

  /** The master logs a face's callback that threw (and goes on): any such record fails a test. */
  private final java.util.logging.Logger masterLog =
      java.util.logging.Logger.getLogger("io.ferrite.kernel.master.MasterState");

  private final List<String> callbackFailures =
      java.util.Collections.synchronizedList(new ArrayList<>());

  private final java.util.logging.Handler capture =
      new java.util.logging.Handler() {
        @Override
        public void publish(java.util.logging.LogRecord r) {
          if (r.getMessage() != null && r.getMessage().contains("failed a callback")) {
            callbackFailures.add(r.getMessage() + ": " + r.getThrown());
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };

  @BeforeEach
  void start() throws Exception {
    masterLog.addHandler(capture);
    // 16 blocks of dram per server and no disk: a file hinted at s2 that is larger spills to s1.
    cluster =
        new NodesCluster(
            dir, Map.of(FerriteConfig.CAPACITY_DRAM, "1m", FerriteConfig.CAPACITY_DISK, "0"));
    cluster.startMaster();
    s1 = cluster.startServer("s1");
    s2 = cluster.startServer("s2");
    cluster.awaitServers(2);
    nodes = cluster.nodes();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
    masterLog.removeHandler(capture);
    assertEquals(List.of(), callbackFailures, "the nodes face's callbacks under the master");
  }

  private byte[] write(String path, String location, int bytes, Random random) {
    byte[] data = new byte[bytes];
    random.nextBytes(data);
    try (NodeWriter w = nodes.create(path, CreateOptions.at(location))) {
      w.writeSync(ByteBuffer.wrap(data));
    }
    return data;
  }

  private byte[] readAll(String path) throws Exception {
    return NodesTest.readAll(nodes.open(path).inputStream());
  }

  /** A new s1 process: its regions are new, so the old ones and every block in them are gone. */
  private void restartS1WithoutItsMemory() throws Exception {
    s1.close();
    cluster.servers.remove(s1);
    s1 = cluster.startServer("s1");
    cluster.awaitServers(2);
  }

  private static NodesException dataLost(Runnable r) {
    NodesException e = assertThrows(NodesException.class, r::run);
    assertEquals(NodesException.Reason.DATA_LOST, e.reason(), e.getMessage());
    assertEquals(ErrorCode.DATA_LOST, e.code());
    assertFalse(e.retryable());
    return e;
  }

  @Test
  void aServerBackWithoutItsRegionsLosesExactlyTheDataItHeld(Random random) throws Exception {
    byte[] b = write("/b", "s2", 2 * BS - 100, random);
    byte[] partial = write("/partial", "s2", 20 * BS + 7, random); // 14 on s2, spills to s1
    byte[] a = write("/a", "s1", 3 * BS + 5, random);
    nodes.createTable("/t", true);
    byte[] kv = new byte[BS + 300];
    random.nextBytes(kv);
    nodes.putAsync("/t/kv", ByteBuffer.wrap(kv), CreateOptions.at("s1")).join();
    byte[] small = "inline, in the master".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    nodes.put("/t/small", small);
    NodeInfo p = nodes.lookup("/partial");
    List<BlockRef> refs = nodes.blocks(p, 0, p.blockCount());
    int s1Id = s1.serverId();
    List<Integer> onS1 = new ArrayList<>();
    for (int i = 0; i < refs.size(); i++) {
      if (refs.get(i).serverId() == s1Id) {
        onS1.add(i);
      }
    }
    assertTrue(!onS1.isEmpty() && onS1.size() < refs.size(), "spread over both: " + onS1);
    long aId = nodes.lookup("/a").id();
    NodeReader early = nodes.open("/a"); // its refs predate the loss

    restartS1WithoutItsMemory();

    // A reader opened before: its read fails at the server, and the master says why.
    NodesException stale = dataLost(() -> early.readFully(0, ByteBuffer.allocate(100)));
    assertTrue(stale.getMessage().contains("/a: bytes 0-"), stale.getMessage());

    // The file on s1 answers DATA_LOST naming it, and says which bytes.
    NodeInfo ai = nodes.lookup("/a");
    assertTrue(ai.isLost());
    assertEquals(4, ai.lostBlocks());
    assertEquals(List.of(new NodeInfo.LostRange(0, a.length)), ai.lost());
    NodesException e = dataLost(() -> nodes.getBytes("/a"));
    assertTrue(e.getMessage().contains("/a: bytes 0-"), e.getMessage());
    dataLost(
        () -> {
          try {
            readAll("/a");
          } catch (java.io.IOException x) {
            throw (NodesException) x.getCause(); // the stream's IOException carries it
          } catch (Exception x) {
            throw new AssertionError(x);
          }
        });
    // A KeyValue is read whole: lost.
    assertTrue(dataLost(() -> nodes.get("/t/kv")).getMessage().contains("/t/kv"));
    // The file on the surviving server reads fine, and so does a value kept in the master.
    assertFalse(nodes.lookup("/b").isLost());
    assertArrayEquals(b, readAll("/b"));
    assertArrayEquals(small, nodes.getBytes("/t/small"));

    // The partial file: its blocks on s1 are lost, the others read.
    NodeInfo pi = nodes.lookup("/partial");
    assertEquals(onS1.size(), pi.lostBlocks());
    NodeReader reader = nodes.open(pi);
    for (int i = 0; i < refs.size(); i++) {
      long from = (long) i * BS;
      int len = (int) Math.min(BS, partial.length - from);
      ByteBuffer dst = ByteBuffer.allocate(len);
      if (onS1.contains(i)) {
        assertNotNull(pi.lostIn(from, from + len), "block " + i);
        NodesException le = dataLost(() -> reader.readFully(from, dst));
        assertTrue(le.getMessage().contains("/partial"), le.getMessage());
      } else {
        assertNull(pi.lostIn(from, from + len), "block " + i);
        reader.readFully(from, dst);
        assertArrayEquals(Arrays.copyOfRange(partial, (int) from, (int) from + len), dst.array());
      }
    }

    // Writes to a lost file are refused; its stat (the lookup) and the summary say lost.
    dataLost(() -> nodes.append("/a").close());
    Nodes.LostSummary sum = nodes.lostSummary();
    assertEquals(3, sum.nodes(), sum.toString());
    assertEquals(List.of("/a", "/partial", "/t/kv"), sum.paths());
    assertEquals(a.length + kv.length + pi.lostBytes(), sum.bytes());
    assertEquals(3L, cluster.ext.describe().get("lost nodes"));

    // Removing a lost node works; its lost blocks are not freed again (the reclaimer frees what the
    // kernel still lists for it: here nothing, for /partial only its surviving blocks).
    long pId = pi.id();
    assertEquals(1, nodes.remove("/a", false));
    assertEquals(1, nodes.remove("/partial", false));
    for (int i = 0; i < 300 && cluster.ext.pendingReclaims() > 0; i++) {
      Thread.sleep(10);
    }
    assertEquals(0, cluster.ext.pendingReclaims());
    assertEquals(List.of(), cluster.master.state().owned("nodes:" + aId));
    assertEquals(List.of(), cluster.master.state().owned("nodes:" + pId));
    assertEquals(1, nodes.lostSummary().nodes());

    // Writing again works, also on the server that came back; a KeyValue is simply put again.
    byte[] again = write("/a", "s1", 3 * BS + 5, random);
    assertArrayEquals(again, readAll("/a"));
    assertFalse(nodes.lookup("/a").isLost());
    nodes.put("/t/kv", kv);
    assertArrayEquals(kv, nodes.getBytes("/t/kv"));
    assertEquals(0, nodes.lostSummary().nodes());
  }

  @Test
  void aWriterWhoseBlocksWereLostIsRefusedAndItsLeaseEnds(Random random) throws Exception {
    byte[] first = new byte[BS + 10];
    random.nextBytes(first);
    Nodes writer = cluster.nodes(); // its own session, closed below
    NodeWriter w = writer.create("/w", CreateOptions.at("s1"));
    w.writeSync(ByteBuffer.wrap(first));
    w.flush(); // published, with blocks held ahead for the next writes
    NodeInfo before = nodes.lookup("/w");
    assertTrue(before.writing() && before.blockCount() > 2, before.toString());

    restartS1WithoutItsMemory();

    NodeInfo lost = nodes.lookup("/w");
    assertEquals(before.blockCount(), lost.lostBlocks(), "those held ahead too");
    assertEquals(List.of(new NodeInfo.LostRange(0, first.length)), lost.lost());
    dataLost(w::close); // its PUBLISH is refused
    // The writer's session ends: so does its lease, and the blocks held ahead are trimmed without
    // freeing the lost ones again (the kernel's free is all or none: one of them would fail it).
    writer.client().close();
    for (int i = 0; i < 300 && nodes.lookup("/w").writing(); i++) {
      Thread.sleep(10);
    }
    NodeInfo after = nodes.lookup("/w");
    assertFalse(after.writing(), after.toString());
    assertEquals(2, after.blockCount(), "trimmed to its size");
    assertEquals(List.of(), cluster.master.state().owned("nodes:" + after.id()));
    assertEquals(1, nodes.remove("/w", false));
    try (NodeWriter again = nodes.create("/w", CreateOptions.at("s1"))) {
      again.writeSync(ByteBuffer.wrap(first));
    }
    assertArrayEquals(first, nodes.getBytes("/w"));
  }

  @Test
  void theLostMarkSurvivesMasterRestartsWithAndWithoutASnapshot(Random random) throws Exception {
    byte[] a = write("/a", "s1", 2 * BS, random);
    write("/b", "s2", BS, random);
    restartS1WithoutItsMemory();
    assertTrue(nodes.lookup("/a").isLost());

    cluster.startMaster(); // replays the LOST record
    cluster.awaitServers(2);
    assertEquals(0, cluster.ext.reconciledAtStart(), "the mark came from the journal");
    nodes = cluster.nodes();
    assertEquals(List.of(new NodeInfo.LostRange(0, a.length)), nodes.lookup("/a").lost());
    assertFalse(nodes.lookup("/b").isLost());

    cluster.master.snapshot();
    cluster.startMaster(); // rebuilds it from the snapshot
    cluster.awaitServers(2);
    assertEquals(0, cluster.ext.reconciledAtStart(), "the mark came from the snapshot");
    nodes = cluster.nodes();
    assertEquals(2, nodes.lookup("/a").lostBlocks());
    assertTrue(dataLost(() -> nodes.getBytes("/a")).getMessage().contains("/a"));
    assertEquals(1, nodes.lostSummary().nodes());
  }

  @Test
  void aJournalWithStaleBlockReferencesIsRepairedAtStart(Random random) throws Exception {
    // A master whose nodes face does not hear of the loss: what a journal written before this fix
    // holds (the kernel freed the blocks, the node still names them).
    cluster.startMaster(
        List.of(
            new io.ferrite.kernel.testing.WithoutRegionsLost(
                new NodesMaster(java.time.Duration.ofMillis(50)))));
    cluster.awaitServers(2);
    nodes = cluster.nodes();
    byte[] a = write("/a", "s1", 2 * BS + 1, random);
    byte[] b = write("/b", "s2", BS, random);
    restartS1WithoutItsMemory();
    assertFalse(nodes.lookup("/a").isLost(), "not heard");
    FerriteException stale = assertThrows(FerriteException.class, () -> nodes.getBytes("/a"));
    assertNotEquals(ErrorCode.DATA_LOST, stale.code(), "what #20 found: " + stale);

    cluster.startMaster(); // the real face: reconciles with what the kernel says it owns
    cluster.awaitServers(2);
    assertEquals(1, cluster.ext.reconciledAtStart());
    nodes = cluster.nodes();
    NodeInfo ai = nodes.lookup("/a");
    assertEquals(3, ai.lostBlocks());
    assertEquals(List.of(new NodeInfo.LostRange(0, a.length)), ai.lost());
    assertTrue(dataLost(() -> nodes.getBytes("/a")).getMessage().contains("/a"));
    assertArrayEquals(b, nodes.getBytes("/b"));

    cluster.startMaster(); // nothing new to mark: the same answer, journaled once
    cluster.awaitServers(2);
    assertEquals(0, cluster.ext.reconciledAtStart());
    nodes = cluster.nodes();
    assertEquals(3, nodes.lookup("/a").lostBlocks());
    assertEquals(1, nodes.remove("/a", false));
    assertEquals(0, nodes.lostSummary().nodes());
  }
}
