package io.ferrite.tx;

import static io.ferrite.tx.TxCommitTest.num;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Re-replication (docs/TX.md, "Recovery: a new copy for a region that lost one"): local fabric,
 * {@code tx.replicas} 2. A region whose primary stopped gets a new backup on a server that held no
 * copy while transfers race the fill; then the new primary stops too and every committed value is
 * on the twice-promoted copy. A fill whose target stops midway is done again on another server.
 */
@ExtendWith(SeedExtension.class)
class TxRepairTest {
  @TempDir Path dir;
  @AutoClose ClusterHarness cluster;

  static final class Cluster extends ClusterHarness {
    Cluster(Path dir, int servers, String pause) throws java.io.IOException {
      super(dir, TxCluster.CREDENTIALS, false, config(pause));
      startMaster();
      for (int i = 0; i < servers; i++) {
        startServer("tx" + i);
      }
    }

    static Map<String, String> config(String pause) {
      Map<String, String> c = TxCluster.config(2);
      c.put(TxConfig.FILL_PAUSE, pause);
      return c;
    }
  }

  /** GET_PLACEMENT: primary, backups, epoch, and the copies being filled. */
  TxPlacement placement(int region) {
    return TxPlacement.read(
        cluster
            .client()
            .callMasterSync(
                TxProtocol.MASTER_SERVICE,
                TxProtocol.GET_PLACEMENT,
                new Wire.Writer().i32(region).toBuffer()),
        true);
  }

  /** Polls the placement until {@code done} holds (the test fails after 30 s of polling). */
  TxPlacement await(int region, Predicate<TxPlacement> done, String what)
      throws InterruptedException {
    TxPlacement p = null;
    for (int i = 0; i < 3000; i++) {
      p = placement(region);
      if (done.test(p)) {
        return p;
      }
      Thread.sleep(10);
    }
    return fail(what + "; placement " + p);
  }

  /**
   * Waits until {@code p}'s region has {@code tx.replicas} 2 copies again (a backup, nothing
   * filling), then checks that the backup's copy of {@code p} holds what its primary holds.
   */
  static void awaitCopies(ClusterHarness cluster, TxClient c, FatPointer p) throws Exception {
    TxRepairTest t = new TxRepairTest();
    t.cluster = cluster;
    TxPlacement done =
        t.await(
            p.region(),
            q -> q.backups().size() == 1 && q.filling().isEmpty(),
            "region " + p.region() + " never got its second copy back");
    Transaction tx = c.txBegin();
    byte[] v = tx.txRead(p);
    assertTrue(tx.txCommit().committed());
    assertArrayEquals(v, t.backupPayload(done.backups().get(0), p), "the new copy of " + p);
  }

  byte[] backupPayload(int server, FatPointer p) {
    return TxCluster.backupCopy(cluster, server, p).payload();
  }

  void stopServer(int id) {
    MemoryServer victim =
        cluster.servers.stream().filter(m -> m.serverId() == id).findFirst().orElseThrow();
    cluster.servers.remove(victim);
    victim.close();
  }

  List<Integer> serverIds() {
    return cluster.servers.stream().map(MemoryServer::serverId).toList();
  }

  /** {@code n} objects of 8 bytes holding {@code value}, all in one region (the first's). */
  static List<FatPointer> accounts(TxClient c, int n, long value) {
    List<FatPointer> out = new ArrayList<>();
    out.add(TxCommitTest.make(c, num(value)));
    while (out.size() < n) {
      Transaction t = c.txBegin();
      FatPointer p = t.txAlloc(8, out.get(0));
      t.txWrite(p, num(value));
      assertTrue(t.txCommit().committed());
      out.add(p);
    }
    return out;
  }

  /** Every account's balance, read in one transaction (retried while aborted or failing over). */
  static long[] balances(TxClient c, List<FatPointer> accounts) {
    for (int attempt = 0; ; attempt++) {
      try {
        Transaction t = c.txBegin();
        long[] out = new long[accounts.size()];
        for (int i = 0; i < out.length; i++) {
          out[i] = num(t.txRead(accounts.get(i)));
        }
        if (t.txCommit().committed()) {
          return out;
        }
      } catch (FerriteException e) {
        if (attempt > 1000) {
          throw e;
        }
      }
    }
  }

  @Test
  void aRegionThatLostACopyGetsANewOneWhileTransfersRunThenSurvivesASecondLoss(Random random)
      throws Exception {
    cluster = new Cluster(dir, 3, "0");
    cluster.awaitServers(3);
    TxClient setup = new TxClient(cluster.client());
    List<FatPointer> acc = accounts(setup, 8, 1000);
    long total = 8 * 1000;
    int region = acc.get(0).region();
    TxPlacement first = placement(region);
    int primary = first.primary();
    // Placed while a server was declared DEAD for a moment (a loaded machine): no backup to lose.
    assertTrue(!first.backups().isEmpty(), () -> "region placed without a backup: " + first);
    int backup = first.backups().get(0);
    int third = serverIds().stream().filter(s -> s != primary && s != backup).findFirst().get();

    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong committed = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (int k = 0; k < 2; k++) {
      TxClient c = new TxClient(cluster.client());
      Random rnd = new Random(random.nextLong());
      Thread th =
          new Thread(
              () -> {
                try {
                  while (!stop.get()) {
                    int x = rnd.nextInt(acc.size());
                    int y = (x + 1 + rnd.nextInt(acc.size() - 1)) % acc.size();
                    long amount = 1 + rnd.nextInt(10);
                    try {
                      Transaction t = c.txBegin();
                      long bx = num(t.txRead(acc.get(x)));
                      long by = num(t.txRead(acc.get(y)));
                      t.txWrite(acc.get(x), num(bx - amount));
                      t.txWrite(acc.get(y), num(by + amount));
                      if (t.txCommit().committed()) {
                        committed.incrementAndGet();
                      }
                    } catch (FerriteException e) {
                      Thread.sleep(1); // failing over: the outcome of that transfer is unknown
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "transfer-" + k);
      threads.add(th);
      th.start();
    }
    try {
      while (committed.get() < 50 && failure.get() == null) {
        Thread.sleep(1);
      }
      stopServer(primary);
      TxPlacement repaired =
          await(
              region,
              p -> p.primary() == backup && p.backups().equals(List.of(third)),
              "server " + third + " never became a backup of region " + region);
      assertTrue(repaired.filling().isEmpty(), repaired.toString());
      long after = committed.get();
      while (committed.get() < after + 50 && failure.get() == null) {
        Thread.sleep(1);
      }
    } finally {
      stop.set(true);
      for (Thread th : threads) {
        th.join();
      }
    }
    if (failure.get() != null) {
      throw new AssertionError("a transfer thread failed", failure.get());
    }
    TxClient reader = new TxClient(cluster.client());
    long[] before = balances(reader, acc);
    assertEquals(total, java.util.Arrays.stream(before).sum());
    for (int i = 0; i < acc.size(); i++) {
      assertArrayEquals(num(before[i]), backupPayload(third, acc.get(i)), "account " + i);
    }
    // The second loss: the new copy is promoted and holds every committed value.
    stopServer(backup);
    await(region, p -> p.primary() == third, "server " + third + " was never promoted");
    long[] later = balances(new TxClient(cluster.client()), acc);
    assertArrayEquals(before, later);
    Transaction t = reader.txBegin();
    t.txWrite(acc.get(0), num(later[0]));
    assertTrue(t.txCommit().committed(), "the twice-promoted copy commits");
  }

  @Test
  void aFillWhoseTargetStopsMidwayIsDoneAgainOnAnotherServer(Random random) throws Exception {
    cluster = new Cluster(dir, 4, "20");
    cluster.awaitServers(4);
    TxClient c = new TxClient(cluster.client());
    List<FatPointer> objs = accounts(c, 40, 7);
    int region = objs.get(0).region();
    TxPlacement first = placement(region);
    stopServer(first.primary());
    TxPlacement filling =
        await(region, p -> !p.filling().isEmpty(), "no fill began for region " + region);
    int target = filling.filling().keySet().iterator().next();
    // Midway: the target made its copy (FILL_BEGIN) and the fill runs (20 ms per object, 40).
    for (int i = 0; ; i++) {
      try {
        cluster
            .client()
            .callSync(
                target,
                TxProtocol.SERVER_SERVICE,
                TxProtocol.OPEN_COPY,
                new Wire.Writer().i32(region).toBuffer());
        break;
      } catch (FerriteException e) {
        if (i > 30_000) {
          throw e;
        }
        Thread.sleep(1);
      }
    }
    stopServer(target);
    // The region keeps serving while its new copy is made again elsewhere.
    long v = 1 + random.nextInt(1000);
    Transaction t = c.txBegin();
    num(t.txRead(objs.get(3)));
    t.txWrite(objs.get(3), num(v));
    assertTrue(t.txCommit().committed());
    TxPlacement done =
        await(
            region,
            p -> p.backups().size() == 1 && p.filling().isEmpty(),
            "region " + region + " never got a new backup");
    int other = done.backups().get(0);
    assertTrue(other != target && other != first.primary(), done.toString());
    for (int i = 0; i < objs.size(); i++) {
      assertEquals(i == 3 ? v : 7, num(backupPayload(other, objs.get(i))), "object " + i);
    }
  }
}
