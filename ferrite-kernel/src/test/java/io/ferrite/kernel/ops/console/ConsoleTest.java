package io.ferrite.kernel.ops.console;

import static io.ferrite.kernel.ops.console.MiniJson.list;
import static io.ferrite.kernel.ops.console.MiniJson.map;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MemberInfo;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The console's JSON over HTTP against a live in-process cluster (master + two servers, local
 * fabric, metrics on port 0): {@code /api/status} is the STATUS RPC's {@link ClusterStatus}, {@code
 * /api/faces} the extensions' {@code describe()}, {@code /api/rates} moves with the reads done.
 */
@ExtendWith(SeedExtension.class)
class ConsoleTest {
  @TempDir Path dir;
  LocalCluster cluster;
  HttpClient http;
  URI base;

  /** A face that describes a counter it keeps. */
  static final class Shelf implements MasterExtension {
    @Override
    public int serviceId() {
      return 40;
    }

    @Override
    public String name() {
      return "shelf";
    }

    @Override
    public void apply(ByteBuffer record) {}

    @Override
    public List<byte[]> snapshot() {
      return List.of();
    }

    @Override
    public void start(MasterContext context) {}

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
      return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
    }

    @Override
    public Map<String, Object> describe() {
      return Map.of("books", 7, "titles", List.of(Map.of("title", "a\"<b>")));
    }
  }

  @BeforeEach
  void start() throws Exception {
    cluster = new LocalCluster(dir, Map.of(FerriteConfig.METRICS_PORT, "0"));
    cluster.startMaster(List.of(new Shelf()));
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
    http = HttpClient.newHttpClient();
    base = cluster.master.ops().url();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(base.resolve(path)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private Map<String, Object> json(String path) throws Exception {
    HttpResponse<String> r = get(path);
    assertEquals(200, r.statusCode(), path + ": " + r.body());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(""));
    return map(MiniJson.parse(r.body()));
  }

  static void await(String what, BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  @Test
  void statusIsTheStatusRpcsClusterStatus(Random random) throws Exception {
    FerriteClient c = cluster.client();
    List<BlockRef> blocks = c.allocate(1 + random.nextInt(5));
    assertTrue(!blocks.isEmpty());
    ClusterStatus before = c.status();
    Map<String, Object> body = json("api/status");
    ClusterStatus after = c.status();
    assertEquals(before, after, "the cluster changed during the test");

    Map<String, Object> st = map(body.get("status"));
    assertEquals(after.clusterId(), st.get("cluster"));
    assertEquals((double) after.blockSize(), st.get("blockSize"));
    assertEquals((double) after.regions(), st.get("regions"));
    assertEquals((double) after.sessions(), st.get("sessions"));
    List<Object> members = list(st.get("members"));
    assertEquals(after.members().size(), members.size());
    long usedSeen = 0;
    for (Object o : members) {
      Map<String, Object> m = map(o);
      ClusterStatus.Member want = after.member(((Double) m.get("id")).intValue());
      assertNotNull(want, "member " + m);
      MemberInfo i = want.info();
      assertEquals(i.name(), m.get("name"));
      assertEquals(i.state().name(), m.get("state"));
      assertEquals((double) want.regions(), m.get("regions"));
      assertEquals(new TreeMap<>(i.addresses()), new TreeMap<>(map(m.get("addresses"))));
      Map<String, Object> classes = map(m.get("classes"));
      assertEquals(want.usage().size(), classes.size());
      for (ClusterStatus.ClassUsage u : want.usage()) {
        Map<String, Object> got = map(classes.get(u.storageClass()));
        assertEquals((double) u.capacityBytes(), got.get("capacity"), u.storageClass());
        assertEquals((double) u.usedBytes(), got.get("used"), u.storageClass());
        usedSeen += u.usedBytes();
      }
    }
    assertTrue(usedSeen >= blocks.size() * after.blockSize(), "the allocated blocks are used");
    assertEquals(
        new TreeMap<>(cluster.master.addresses()),
        new TreeMap<>(map(map(body.get("master")).get("addresses"))));
  }

  @Test
  void facesAreTheExtensionsDescriptions() throws Exception {
    Map<String, Object> faces = json("api/faces");
    assertEquals(List.of("shelf"), List.copyOf(faces.keySet()));
    Map<String, Object> shelf = map(faces.get("shelf"));
    assertEquals(7.0, shelf.get("books"));
    assertEquals("a\"<b>", map(list(shelf.get("titles")).get(0)).get("title"));
  }

  @Test
  void ratesShowTheReadsDone() throws Exception {
    FerriteClient c = cluster.client();
    BlockRef b = c.allocate(1).get(0);
    ByteBuffer dst = ByteBuffer.allocate(512);
    double[] seen = new double[2];
    // Reads go on until a sample has them: each sample is a second of what heartbeats reported.
    await(
        "a sample with reads",
        () -> {
          for (int k = 0; k < 50; k++) {
            dst.clear();
            c.readSync(b, 0, dst);
          }
          try {
            for (Object o : list(json("api/rates").get("samples"))) {
              Map<String, Object> s = map(o);
              double reads = (Double) map(s.get("ops")).get("read");
              if (reads > 0) {
                seen[0] = reads;
                seen[1] = (Double) map(s.get("bytes")).get("read");
                return true;
              }
            }
            return false;
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        });
    assertTrue(seen[0] > 0);
    assertTrue(seen[1] >= 512 * seen[0] * 0.99, "read bytes/s " + seen[1] + " for " + seen[0]);
    Map<String, Object> rates = json("api/rates");
    assertEquals(
        List.of("read", "write", "compare_and_swap", "fetch_and_add", "rpc"),
        list(rates.get("kinds")));
  }

  @Test
  void anOlderServersHeartbeatWithoutLoadIsStillTaken() {
    int id = cluster.servers.get(0).serverId();
    // As a server before #17 sends it: the id alone. The master takes it (no INVALID_ARGUMENT).
    cluster.adminClient().masterStub().heartbeat(id);
    cluster.adminClient().masterStub().heartbeat(id, cluster.servers.get(0).load());
  }

  @Test
  void pageAtRootAndNothingElse() throws Exception {
    HttpResponse<String> page = get("");
    assertEquals(200, page.statusCode());
    assertTrue(page.body().contains("<canvas id=\"rates-chart\""), page.body());
    assertTrue(!page.body().contains("http://") && !page.body().contains("https://"), "no network");
    assertEquals(404, get("nothing-here").statusCode());
    assertEquals("ok\n", get("health").body());
  }
}
