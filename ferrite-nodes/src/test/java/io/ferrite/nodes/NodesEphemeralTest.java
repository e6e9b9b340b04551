package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ephemeral Directories (docs/NODES.md, "Ephemeral directories"): removed with their subtree when
 * the owner's session ends — closed, or expired because the client died — also across a master
 * restart; nothing else is touched. Over the local fabric, 64 KiB blocks, session lease 1 s.
 */
@ExtendWith(SeedExtension.class)
class NodesEphemeralTest {
  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;

  @BeforeEach
  void start() throws Exception {
    cluster = new NodesCluster(dir, Map.of());
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
    nodes = cluster.nodes();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void anOwnerThatClosesTakesTheSubtreeAndAbortsOtherWritersInside(Random random) throws Exception {
    FerriteClient ownerClient = cluster.client();
    Nodes owner = new Nodes(ownerClient);
    NodeInfo app = owner.mkdirEphemeral("/app");
    assertTrue(app.ephemeral());
    assertFalse(app.writing(), "a Directory is never being written");
    assertTrue(nodes.lookup("/app").ephemeral(), "another client sees it ephemeral");
    assertFalse(nodes.mkdir("/plain").ephemeral());

    byte[] kept = NodesTest.random(random, 100_000);
    owner.mkdirs("/keep/sub");
    try (NodeWriter w = owner.create("/keep/sub/f")) {
      w.writeSync(ByteBuffer.wrap(kept));
    }
    List<Long> ids = new ArrayList<>();
    owner.mkdirs("/app/shuffle-0/deep");
    ids.add(write(owner, "/app/shuffle-0/deep/mine", NodesTest.random(random, 150_000)));
    owner.createTable("/app/t", true);
    owner.put("/app/t/k", NodesTest.random(random, 5_000));
    ids.add(owner.lookup("/app/t/k").id());
    // Another session writes inside: one File published, one still open when the owner goes.
    FerriteClient otherClient = cluster.client();
    Nodes other = new Nodes(otherClient);
    ids.add(write(other, "/app/shuffle-0/theirs", NodesTest.random(random, 70_000)));
    NodeWriter open = other.create("/app/shuffle-0/open");
    open.writeSync(ByteBuffer.wrap(NodesTest.random(random, 140_000)));
    ids.add(open.info().id());
    for (long id : ids) {
      assertFalse(owned(id).isEmpty(), "node " + id + " holds blocks");
    }

    ownerClient.close();

    assertFalse(nodes.exists("/app"));
    assertFalse(nodes.exists("/app/shuffle-0/theirs"));
    for (long id : ids) {
      awaitEmpty(id);
    }
    // The open writer inside is aborted: its close (PUBLISH) names the removal, nothing more.
    NodesException e = assertThrows(NodesException.class, open::close);
    assertEquals(NodesException.Reason.NOT_FOUND, e.reason(), e.getMessage());
    // The other session lives on, and everything outside the ephemeral Directory is untouched.
    write(other, "/plain/after", new byte[] {1});
    assertArrayEquals(kept, nodes.getBytes("/keep/sub/f"));
    assertTrue(nodes.exists("/plain"));
    assertFalse(nodes.lookup("/keep").ephemeral());
    // Its name is free again.
    assertTrue(nodes.mkdirEphemeral("/app").ephemeral());
    otherClient.close();
  }

  @Test
  void anOwnerWhoseLeaseExpiresLosesItsDirectory(Random random) throws Exception {
    // A client that died: its session is opened on the master and never renewed again.
    long dead = cluster.master.state().openSession("dead", 1_500).sessionId();
    NodeInfo app = rawCreateEphemeral("/app", dead);
    assertTrue(app.ephemeral());
    // A live writer inside (it could create it, so the Directory was there).
    long theirs = write(nodes, "/app/theirs", NodesTest.random(random, 100_000));
    NodeWriter open = nodes.create("/app/open");
    open.writeSync(ByteBuffer.wrap(NodesTest.random(random, 70_000)));
    nodes.mkdir("/sibling");

    awaitGone(nodes, "/app");
    awaitEmpty(theirs);
    awaitEmpty(open.info().id());
    NodesException e = assertThrows(NodesException.class, open::close);
    assertEquals(NodesException.Reason.NOT_FOUND, e.reason(), e.getMessage());
    assertTrue(nodes.exists("/sibling"));
    assertFalse(cluster.master.state().hasSession(dead));
  }

  @Test
  void aMasterRestartKeepsALiveOwnersDirectoryAndRemovesADeadOnes(Random random) throws Exception {
    // Over tcp on a fixed port, where the owner's client finds the restarted master again.
    cluster.close();
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    cluster =
        new NodesCluster(
            dir.resolve("tcp"),
            true,
            Map.of(io.ferrite.kernel.config.FerriteConfig.MASTER_PORT, Integer.toString(port)));
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
    nodes = new Nodes(cluster.client("tcp"));
    FerriteClient ownerClient = cluster.client("tcp");
    Nodes owner = new Nodes(ownerClient);
    owner.mkdirEphemeral("/live");
    byte[] data = NodesTest.random(random, 90_000);
    write(owner, "/live/f", data);
    long dead = cluster.master.state().openSession("dead", 1_500).sessionId();
    rawCreateEphemeral("/dead", dead);
    long deadFile = write(nodes, "/dead/f", NodesTest.random(random, 90_000));
    cluster.master.snapshot(); // the owner must survive a snapshot as well as the log
    owner.mkdir("/live/after-snapshot");

    cluster.startMaster();
    cluster.awaitServers(2);
    Nodes n2 = new Nodes(cluster.client("tcp"));
    // The dead owner's session got a fresh lease at recovery; nobody renews it.
    awaitGone(n2, "/dead");
    awaitEmpty(deadFile);
    // The live owner's client renews on the new master: kept, still ephemeral, through the same
    // time the dead one needed to go.
    assertTrue(n2.lookup("/live").ephemeral());
    assertArrayEquals(data, n2.getBytes("/live/f"));
    assertTrue(n2.exists("/live/after-snapshot"));

    ownerClient.close();
    awaitGone(n2, "/live");
    // Removed is removed: neither comes back from the journal.
    cluster.startMaster();
    cluster.awaitServers(2);
    Nodes n3 = new Nodes(cluster.client("tcp"));
    assertFalse(n3.exists("/live"));
    assertFalse(n3.exists("/dead"));
  }

  @Test
  void anOwnerSessionThatEndedWhileNoNodesFaceHeardIsRemovedAtStart(Random random)
      throws Exception {
    long gone = cluster.master.state().openSession("gone", 600_000).sessionId();
    rawCreateEphemeral("/gone", gone);
    long file = write(nodes, "/gone/f", NodesTest.random(random, 90_000));
    nodes.mkdir("/sibling");
    // A master without the nodes face (its records kept aside) sees the session end: nothing
    // tells the namespace, whose journal still names the owner.
    cluster.startMaster(List.of());
    cluster.master.state().closeSession(gone);
    cluster.startMaster();
    cluster.awaitServers(2);
    Nodes n2 = cluster.nodes();
    assertFalse(n2.exists("/gone"), "an owner the kernel no longer has is gone at start");
    assertTrue(n2.exists("/sibling"));
    awaitEmpty(file);
  }

  @Test
  void anEphemeralDirectoryCanBeMovedAndRemovedByHand() throws Exception {
    FerriteClient ownerClient = cluster.client();
    Nodes owner = new Nodes(ownerClient);
    owner.mkdirEphemeral("/a");
    write(owner, "/a/f", new byte[] {1, 2, 3});
    owner.mkdirEphemeral("/b");
    owner.mkdirEphemeral("/c");
    nodes.mkdir("/away");
    // Moved by another client: still the owner's, at its new path.
    NodeInfo moved = nodes.move("/a", "/away/a");
    assertTrue(moved.ephemeral());
    assertArrayEquals(new byte[] {1, 2, 3}, nodes.getBytes("/away/a/f"));
    // Removed by hand: gone, and the owner's end must not touch the new node of that name.
    assertEquals(1, nodes.remove("/b", true));
    nodes.mkdir("/b");
    // Nested ephemeral Directories of the owner go with it too.
    owner.mkdirEphemeral("/c/d");

    ownerClient.close();

    assertFalse(nodes.exists("/away/a"));
    assertFalse(nodes.exists("/c"));
    assertTrue(nodes.exists("/away"));
    assertTrue(nodes.exists("/b"));
    assertFalse(nodes.lookup("/b").ephemeral());
  }

  @Test
  void onlyDirectoriesAreEphemeralAndTheirOwnerCannotPublishOrAbortThem() throws Exception {
    NodesException e =
        assertThrows(
            NodesException.class,
            () -> nodes.create("/f", CreateOptions.DEFAULT.withEphemeral()).close());
    assertEquals(NodesException.Reason.INVALID_ARGUMENT, e.reason());
    java.util.concurrent.CompletionException c =
        assertThrows(
            java.util.concurrent.CompletionException.class,
            () ->
                nodes
                    .createContainerAsync(
                        "/t", NodeType.TABLE, CreateOptions.DEFAULT.withEphemeral())
                    .join());
    assertEquals(NodesException.Reason.INVALID_ARGUMENT, ((NodesException) c.getCause()).reason());
    assertFalse(nodes.exists("/f"));
    assertFalse(nodes.exists("/t"));

    long id = nodes.mkdirEphemeral("/e").id();
    long session = nodes.client().sessionId();
    for (int opcode : new int[] {NodesProtocol.PUBLISH, NodesProtocol.ABORT}) {
      Wire.Writer body = new Wire.Writer().i64(id).i64(session);
      if (opcode == NodesProtocol.PUBLISH) {
        body.i64(0).i64(0).u8(1);
      }
      RuntimeException x = assertThrows(RuntimeException.class, () -> raw(opcode, body));
      assertEquals(NodesException.Reason.WRONG_TYPE, ((NodesException) x).reason(), x.getMessage());
    }
    assertTrue(nodes.lookup("/e").ephemeral(), "still owned after the refused calls");
  }

  // ------------------------------------------------------------------ helpers

  private static long write(Nodes n, String path, byte[] data) {
    try (NodeWriter w = n.create(path)) {
      w.writeSync(ByteBuffer.wrap(data));
      return w.info().id();
    }
  }

  /** A CREATE of an ephemeral Directory for {@code session}, as Nodes sends it. */
  private NodeInfo rawCreateEphemeral(String path, long session) {
    Wire.Writer body =
        new Wire.Writer()
            .str(path)
            .u8(NodeType.DIRECTORY.wire())
            .u8(NodesProtocol.FLAG_ENUMERABLE | NodesProtocol.FLAG_EPHEMERAL)
            .str("")
            .str("")
            .i64(session)
            .i32(0)
            .u8(0);
    return NodesProtocol.readNode(new Wire.Reader(raw(NodesProtocol.CREATE, body), "node"));
  }

  private ByteBuffer raw(int opcode, Wire.Writer body) {
    try {
      return Futures.join(
          nodes.client().callMaster(NodesProtocol.SERVICE, opcode, body.toBuffer()));
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
  }

  private List<BlockRef> owned(long id) {
    return cluster.master.state().owned("nodes:" + id);
  }

  /** Bounded: fails after 30 s (a lease here is 1-1.5 s), never asserts on how long it took. */
  private static void awaitGone(Nodes n, String path) throws InterruptedException {
    for (int i = 0; i < 3000 && n.exists(path); i++) {
      Thread.sleep(10);
    }
    assertFalse(n.exists(path), path + " removed when its owner's session ended");
  }

  private void awaitEmpty(long id) throws InterruptedException {
    for (int i = 0; i < 3000 && !owned(id).isEmpty(); i++) {
      Thread.sleep(10);
    }
    assertEquals(List.of(), owned(id), "blocks of node " + id + " freed");
  }
}
