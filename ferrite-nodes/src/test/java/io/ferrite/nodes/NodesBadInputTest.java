package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodesException.Reason;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input: each case fails with its own {@link Reason} and leaves the namespace exactly as it was
 * (compared as a full recursive listing with types and sizes).
 */
class NodesBadInputTest {
  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;
  FerriteClient client;

  @BeforeEach
  void start() throws Exception {
    cluster = new NodesCluster(dir, Map.of());
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.awaitServers(1);
    client = cluster.client();
    nodes = new Nodes(client);
    nodes.mkdirs("/d/sub");
    nodes.createTable("/t", true);
    nodes.createBag("/b");
    try (NodeWriter w = nodes.create("/d/f")) {
      w.writeSync(ByteBuffer.wrap(new byte[100]));
    }
    nodes.put("/t/k", new byte[] {1});
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private List<String> dump() {
    List<String> out = new ArrayList<>();
    dump("/", out);
    return out;
  }

  private void dump(String path, List<String> out) {
    for (NodeInfo c : nodes.list(path)) {
      String p = NodePath.join(path, c.path());
      out.add(p + " " + c.type() + " " + c.size() + " " + c.id());
      if (c.type().isContainer()) {
        dump(p, out);
      }
    }
  }

  /** Runs {@code bad}, expects {@code reason}, and checks that nothing changed. */
  private void rejects(Reason reason, Executable bad) {
    List<String> before = dump();
    NodesException e = assertThrows(NodesException.class, bad);
    assertEquals(reason, e.reason(), e.getMessage());
    assertEquals(before, dump(), "a failed operation changed the namespace: " + e.getMessage());
  }

  private ByteBuffer raw(int opcode, Wire.Writer body) {
    try {
      return Futures.join(client.callMaster(NodesProtocol.SERVICE, opcode, body.toBuffer()));
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
  }

  @Test
  void badPathsAreRejectedByTheClientAndByTheMaster() {
    String longName = "x".repeat(NodePath.MAX_COMPONENT_BYTES + 1);
    String longPath = ("/" + "y".repeat(200)).repeat(25);
    for (String bad :
        new String[] {
          "",
          "relative",
          "d/f",
          "/d/../d",
          "/d/./f",
          "/d//f",
          "/d/",
          "//",
          "/" + longName,
          longPath,
          "/d/a\0b"
        }) {
      rejects(Reason.INVALID_PATH, () -> nodes.mkdir(bad));
      rejects(Reason.INVALID_PATH, () -> nodes.lookup(bad));
      // The master checks too: a client that skips the check gets the same answer.
      rejects(
          Reason.INVALID_PATH,
          () ->
              raw(
                  NodesProtocol.CREATE,
                  new Wire.Writer()
                      .str(bad)
                      .u8(NodeType.DIRECTORY.wire())
                      .u8(1)
                      .str("")
                      .str("")
                      .i64(client.sessionId())
                      .i32(0)
                      .u8(0)));
      rejects(
          Reason.INVALID_PATH, () -> raw(NodesProtocol.LOOKUP, new Wire.Writer().str(bad).i32(0)));
    }
    rejects(Reason.INVALID_PATH, () -> nodes.remove("/", true));
    rejects(Reason.ALREADY_EXISTS, () -> nodes.mkdir("/"));
  }

  @Test
  void creatingUnderANonContainerOrTheWrongContainer() {
    rejects(Reason.NOT_A_CONTAINER, () -> nodes.mkdir("/d/f/x"));
    rejects(Reason.NOT_A_CONTAINER, () -> nodes.create("/d/f/x"));
    rejects(Reason.NOT_A_CONTAINER, () -> nodes.mkdir("/t/k/x"));
    rejects(Reason.NOT_FOUND, () -> nodes.mkdir("/nope/x"));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.create("/t/file"));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.put("/d/kv", new byte[] {1}));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.put("/d/kv", new byte[100_000]));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.mkdir("/t/dir"));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.mkdir("/b/dir"));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.createBag("/b/bag"));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.createTable("/t/t2", true));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.move("/d/f", "/t/f"));
    rejects(Reason.WRONG_CONTAINER, () -> nodes.move("/t/k", "/d/k"));
    rejects(Reason.ALREADY_EXISTS, () -> nodes.create("/d/f"));
    rejects(Reason.ALREADY_EXISTS, () -> nodes.mkdir("/d/sub"));
    rejects(Reason.ALREADY_EXISTS, () -> nodes.move("/d/sub", "/d/f"));
    rejects(Reason.NOT_A_CONTAINER, () -> nodes.mkdirs("/d/f/g"));
  }

  @Test
  void readingPastTheEnd() throws IOException {
    NodeReader r = nodes.open("/d/f");
    rejects(Reason.PAST_END, () -> r.readFully(90, ByteBuffer.allocate(11)));
    rejects(Reason.PAST_END, () -> Futures.join(r.read(101, ByteBuffer.allocate(1))));
    NodeReader.SeekableInputStream in = r.inputStream();
    IOException e = assertThrows(IOException.class, () -> in.seek(101));
    assertEquals(Reason.PAST_END, ((NodesException) e.getCause()).reason());
    rejects(Reason.WRONG_TYPE, () -> nodes.open("/d"));
    rejects(Reason.WRONG_TYPE, () -> nodes.openBag("/d"));
    rejects(Reason.WRONG_TYPE, () -> nodes.list("/d/f").iterator());
    rejects(Reason.NOT_FOUND, () -> nodes.open("/d/missing"));
  }

  @Test
  void writingToAClosedOrForeignFile() {
    NodeWriter w = nodes.append("/d/f");
    w.close();
    rejects(Reason.CLOSED, () -> Futures.join(w.write(ByteBuffer.wrap(new byte[] {1}))));
    // A second close is a no-op (AutoCloseable), not CLOSED; it changes nothing.
    List<String> before = dump();
    w.close();
    assertEquals(before, dump(), "a second close changed the namespace");

    Nodes other = cluster.nodes();
    NodeWriter mine = nodes.append("/d/f");
    rejects(Reason.WRITE_LOCKED, () -> other.append("/d/f"));
    long id = mine.info().id();
    // Another session naming the node directly: it holds no lease, so it can neither map new
    // blocks nor publish a size.
    rejects(Reason.NOT_WRITER, () -> Futures.join(other.mapAsync(id, 0, 4, true)));
    rejects(Reason.NOT_WRITER, () -> Futures.join(other.publishAsync(id, 0, 0, true)));
    rejects(Reason.NOT_WRITER, () -> Futures.join(other.abortAsync(id)));
    rejects(Reason.WRONG_TYPE, () -> nodes.append("/t/k"));
    rejects(Reason.WRONG_TYPE, () -> nodes.append("/d"));
    mine.close();
  }

  @Test
  void removingAndMovingContainers() {
    rejects(Reason.NOT_EMPTY, () -> nodes.remove("/d", false));
    rejects(Reason.NOT_EMPTY, () -> nodes.remove("/t", false));
    rejects(Reason.INVALID_MOVE, () -> nodes.move("/d", "/d/sub/d"));
    rejects(Reason.INVALID_MOVE, () -> nodes.move("/d", "/d/d"));
    rejects(Reason.INVALID_MOVE, () -> nodes.move("/", "/x"));
    rejects(Reason.INVALID_MOVE, () -> nodes.move("/d", "/"));
    rejects(Reason.NOT_FOUND, () -> nodes.move("/missing", "/x"));
    rejects(Reason.NOT_FOUND, () -> nodes.remove("/missing", true));
    rejects(Reason.NOT_FOUND, () -> nodes.move("/d/f", "/missing/f"));
  }

  @Test
  void garbageBodiesGetTypedErrorsAndTheMasterKeepsServing() {
    for (int op = 1; op <= 9; op++) {
      int opcode = op;
      FerriteException e =
          assertThrows(FerriteException.class, () -> raw(opcode, new Wire.Writer().u8(3)));
      assertEquals(io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
    }
    FerriteException e = assertThrows(FerriteException.class, () -> raw(99, new Wire.Writer()));
    assertEquals(io.ferrite.fabric.ErrorCode.UNKNOWN_OPCODE, e.code());
    assertEquals(100, nodes.lookup("/d/f").size());
  }
}
