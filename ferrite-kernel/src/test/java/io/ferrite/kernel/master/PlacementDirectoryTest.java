package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.testing.ClusterHarness;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The placement directory of master group 0 (docs/RESILIENCE.md, "Master groups"). */
@ExtendWith(SeedExtension.class)
class PlacementDirectoryTest {
  static final Credentials CREDENTIALS =
      new Credentials("placement", "0123456789abcdef-placement".getBytes(StandardCharsets.UTF_8));

  /** A face that holds the top-level names it was given (made before there were groups). */
  static final class Holder implements MasterExtension {
    final Set<String> names;

    Holder(Set<String> names) {
      this.names = names;
    }

    @Override
    public int serviceId() {
      return 99;
    }

    @Override
    public String name() {
      return "holder";
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
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer req) {
      return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
    }

    @Override
    public boolean holdsName(String kind, String name) {
      return kind.equals("nodes") && names.contains(name);
    }
  }

  @TempDir Path dir;
  ClusterHarness cluster;
  PlacementDirectory directory;

  @BeforeEach
  void start() throws Exception {
    cluster = new ClusterHarness(dir, CREDENTIALS, false, Map.of());
    startMaster();
  }

  private void startMaster() {
    directory = new PlacementDirectory();
    cluster.startMaster(List.of(directory, new Holder(Set.of("legacy"))));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private static int place(FerriteClient c, String key, int groups, int preferred) {
    ByteBuffer b =
        c.callMasterSync(
            PlacementProtocol.SERVICE,
            PlacementProtocol.PLACE,
            new Wire.Writer().str(key).i32(groups).i32(preferred).toBuffer());
    return new Wire.Reader(b, "place").i32("group");
  }

  private static int find(FerriteClient c, String key) {
    ByteBuffer b =
        c.callMasterSync(
            PlacementProtocol.SERVICE,
            PlacementProtocol.FIND,
            new Wire.Writer().str(key).toBuffer());
    return new Wire.Reader(b, "find").i32("group");
  }

  @Test
  void aPlacementIsJournaledAndNeverMoves() {
    FerriteClient c = cluster.client();
    assertEquals(-1, find(c, "nodes:a"));
    int g = place(c, "nodes:a", 2, -1);
    assertEquals(PlacementProtocol.choose("nodes:a", 2), g);
    // Asked again by a client that knows more groups, or prefers another: it stays.
    assertEquals(g, place(c, "nodes:a", 5, 4));
    assertEquals(g, place(c, "nodes:a", 2, 1 - g));
    assertEquals(3, place(c, "nodes:b", 4, 3), "a new name goes where the caller prefers");
    cluster.startMaster(List.of(directory = new PlacementDirectory(), new Holder(Set.of())));
    FerriteClient after = cluster.client();
    assertEquals(g, find(after, "nodes:a"));
    assertEquals(3, find(after, "nodes:b"));
    assertEquals(2, directory.size());
  }

  @Test
  void concurrentPlacementsOfOneNewNameAgree(Random random) throws Exception {
    List<FerriteClient> clients = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      clients.add(cluster.client());
    }
    for (int round = 0; round < 20; round++) {
      String key = "nodes:n" + Long.toHexString(random.nextLong());
      CyclicBarrier barrier = new CyclicBarrier(clients.size());
      List<CompletableFuture<Integer>> answers = new ArrayList<>();
      for (int i = 0; i < clients.size(); i++) {
        FerriteClient c = clients.get(i);
        int preferred = i; // each caller wants another group: only the first placement counts
        answers.add(
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    barrier.await(30, TimeUnit.SECONDS);
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                  return place(c, key, 4, preferred);
                }));
      }
      Set<Integer> got = new TreeSet<>();
      for (CompletableFuture<Integer> a : answers) {
        got.add(a.get(30, TimeUnit.SECONDS));
      }
      assertEquals(1, got.size(), key + ": the callers were told different groups " + got);
      assertEquals(got.iterator().next(), find(clients.get(0), key));
    }
  }

  @Test
  void aNameMadeBeforeTheClusterHadGroupsStaysInGroupZero() {
    FerriteClient c = cluster.client();
    assertEquals(0, place(c, "nodes:legacy", 2, 1));
    assertEquals(0, place(c, "nodes:legacy", 3, -1));
    assertEquals(1, place(c, "nodes:fresh", 2, 1));
  }

  @Test
  void newNamesSpreadAndAnAddedGroupOnlyTakesNames(Random random) {
    int[] in2 = new int[2];
    int moved = 0;
    int n = 2000;
    for (int i = 0; i < n; i++) {
      String key = "nodes:" + Long.toHexString(random.nextLong());
      int two = PlacementProtocol.choose(key, 2);
      int three = PlacementProtocol.choose(key, 3);
      in2[two]++;
      if (three != two) {
        assertEquals(2, three, key + " would move between old groups");
        moved++;
      }
    }
    assertTrue(in2[0] > n * 0.4 && in2[1] > n * 0.4, "uneven: " + in2[0] + "/" + in2[1]);
    assertTrue(moved > n * 0.25 && moved < n * 0.42, "the new group takes ~1/3: " + moved);
  }
}
