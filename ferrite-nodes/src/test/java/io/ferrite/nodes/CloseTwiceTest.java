package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.ops.OpsServer;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every public closeable of the kernel's and the nodes face's client APIs closes twice without a
 * word, as {@link AutoCloseable} asks ("more than once ... no visible side effect" for {@link
 * java.io.Closeable}): the second close is a no-op, also when closing one closed another (a
 * NodeWriter's stream closes the writer; try-with-resources then closes the writer again).
 */
@ExtendWith(SeedExtension.class)
class CloseTwiceTest {
  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;

  @BeforeEach
  void start() throws Exception {
    cluster = new NodesCluster(dir, Map.of());
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.awaitServers(1);
    nodes = cluster.nodes();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private static void closeTwice(String what, AutoCloseable c) {
    assertDoesNotThrow(c::close, what + ": first close");
    assertDoesNotThrow(c::close, what + ": second close");
  }

  private static byte[] bytes(Random r, int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return b;
  }

  private byte[] readAll(String path) throws IOException {
    try (InputStream in = nodes.open(path).inputStream()) {
      return in.readAllBytes();
    }
  }

  @Test
  void aWriterAndItsStreamInOneTry(Random random) throws Exception {
    byte[] data = bytes(random, 200_000);
    // The case: the stream's close closes the writer, then the try closes the writer.
    try (NodeWriter w = nodes.create("/f");
        OutputStream out = w.outputStream()) {
      out.write(data);
    }
    assertArrayEquals(data, readAll("/f"));
  }

  @Test
  void aWriterClosedBeforeItsStream(Random random) throws Exception {
    byte[] data = bytes(random, 100_000);
    NodeWriter w = nodes.create("/g");
    OutputStream out = w.outputStream();
    out.write(data);
    out.flush();
    w.close();
    assertDoesNotThrow(out::close, "the stream after its writer, nothing buffered");
    closeTwice("the stream", out);
    assertArrayEquals(data, readAll("/g"));
  }

  @Test
  void aWriterClosesTwiceAndStaysClosed(Random random) throws Exception {
    NodeWriter w = nodes.create("/h");
    w.writeSync(ByteBuffer.wrap(bytes(random, 1000)));
    CompletableFuture<NodeInfo> first = w.closeAsync();
    NodeInfo info = first.join();
    assertEquals(1000, info.size());
    assertSame(info, w.closeAsync().join(), "a second closeAsync: the first's result");
    closeTwice("a closed writer", w);
    NodesException e =
        assertThrows(
            NodesException.class, () -> w.writeSync(ByteBuffer.wrap(new byte[] {1})), "write");
    assertEquals(NodesException.Reason.CLOSED, e.reason());

    NodeWriter aborted = nodes.create("/i");
    aborted.abort();
    closeTwice("an aborted writer", aborted);
  }

  @Test
  void readersCloseTwice(Random random) throws Exception {
    nodes.createBag("/bag");
    for (int i = 0; i < 2; i++) {
      try (NodeWriter w = nodes.create("/bag/part-" + i)) {
        w.writeSync(ByteBuffer.wrap(bytes(random, 70_000)));
      }
    }
    NodeReader.SeekableInputStream in = nodes.open("/bag/part-0").inputStream();
    in.read();
    closeTwice("a node's stream", in);
    BagInputStream bag = nodes.openBag("/bag");
    bag.read();
    closeTwice("a bag's stream", bag);
    assertThrows(IOException.class, bag::read, "a closed bag reads nothing");
  }

  @Test
  void theKernelsCloseablesCloseTwice() throws Exception {
    FerriteClient c = cluster.client();
    c.status();
    closeTwice("a client", c);

    LocalFabric fabric = new LocalFabric(cluster.network);
    FabricConnection conn =
        fabric.connect(cluster.masterAddress(), ConnectOptions.of(cluster.credentials));
    closeTwice("a connection", conn);
    closeTwice("a fabric", fabric);

    Master m = cluster.master;
    OpsServer ops = OpsServer.start("127.0.0.1", 0, m.metrics(), cluster.credentials, "test");
    closeTwice("an ops server", ops);

    MappedRegion r = MappedRegion.create(dir.resolve("region"), 1, 4096, 42);
    closeTwice("a region", r);

    MemoryServer s = cluster.servers.get(0);
    closeTwice("a memory server", s);
    closeTwice("a master", m);
    // The harness closes them a third time after the test.
  }
}
