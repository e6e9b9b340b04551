package io.ferrite.tx;

import static io.ferrite.tx.TxCommitTest.num;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.local.LocalFaults;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.tx.server.TxLogsTesting;
import io.micrometer.core.instrument.Gauge;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Truncation (docs/TX.md "Truncation"): a decider keeps a commit decision of a transaction with
 * other participant regions (pinned) until each of them resolved it, however many decisions follow.
 * With {@code tx.decisions.kept} 32 (its bounded maps, logs and copies remember 32 decisions), a
 * participant that comes back, from its log (replicas 1) or as a promoted backup (replicas 2),
 * after 256 later decisions of its decider still learns that its transaction committed; once every
 * participant applied, the pins go (the gauges {@code ferrite.tx.decisions.pinned} and {@code
 * ferrite.tx.decisions.pinned.copies} return to 0). Without the pins (main before this) the decider
 * has forgotten the commit and answers abort: the participant's acknowledged writes are lost (the
 * first two tests fail: "expected: <20> but was: <2>").
 */
@ExtendWith(SeedExtension.class)
class TxTruncationTest {
  static final int KEPT = 32;
  static final int LATER = 8 * KEPT;

  @TempDir Path dir;
  TxCluster cluster;
  TxClient a;

  final Map<String, String> settings =
      new HashMap<>(
          Map.of(
              TxConfig.LOCK_LEASE,
              "1s",
              TxConfig.DECISIONS_KEPT,
              Integer.toString(KEPT),
              TxConfig.LOG_CHECKPOINT,
              "4k"));

  /** The decider server (of region x's), the other participant (y's), a third (z's). */
  int decider;

  int other;
  int third;

  /** x in the decider region (the lowest id), y on the other participant, z on the third. */
  FatPointer x;

  FatPointer y;
  FatPointer z;

  @AfterEach
  void stop() throws Exception {
    TxLogsTesting.pauseAppenders(false);
    TxLogsTesting.crashOnClose(false);
    if (cluster != null) {
      cluster.close();
    }
  }

  private void start(int replicas) throws Exception {
    cluster = new TxCluster(dir, 0, false, replicas);
    for (String name : List.of("tx0", "tx1", "tx2")) {
      cluster.startServer(name, settings);
    }
    cluster.awaitServers(3);
    a = new TxClient(cluster.client());
    List<Integer> ids = cluster.servers.stream().map(MemoryServer::serverId).sorted().toList();
    decider = ids.get(0);
    other = ids.get(1);
    third = ids.get(2);
    // Made in this order, so x's region has the lowest id: the decider region of every
    // transaction below.
    x = make(a.newRegionNear(decider).region(), 1);
    y = make(a.newRegionNear(other).region(), 2);
    z = make(a.newRegionNear(third).region(), 3);
    assertTrue(x.region() < y.region() && x.region() < z.region(), "x's region decides");
    assertEquals(decider, a.view(x.region()).primary());
    assertEquals(other, a.view(y.region()).primary());
    assertEquals(third, a.view(z.region()).primary());
  }

  private FatPointer make(int region, long v) {
    Transaction t = a.txBegin();
    FatPointer p = t.txAlloc(8, new FatPointer(region, 0, 1, 0));
    t.txWrite(p, num(v));
    TxResult r = t.txCommit();
    assertTrue(r.committed(), r.detail());
    return p;
  }

  private static Transaction write(TxClient c, FatPointer p, long pv, FatPointer q, long qv) {
    Transaction t = c.txBegin();
    t.txReadAll(List.of(p, q));
    t.txWrite(p, num(pv));
    t.txWrite(q, num(qv));
    return t;
  }

  /** Commits {x = 10, y = 20} with the other participant's COMMIT held in the network. */
  private LocalFaults.Hold commitWithoutTheOthersCommit() throws Exception {
    LocalFaults.Hold hold =
        cluster.network.faults().holdNextRpc(other, TxProtocol.SERVER_SERVICE, TxProtocol.COMMIT);
    TxResult r = write(a, x, 10, y, 20).txCommit();
    assertTrue(r.committed(), r.detail());
    assertTrue(hold.isCaught(), "the other participant's COMMIT was sent (and not waited for)");
    assertEquals(-1, a.probe(y), "locked at the other participant until it applies");
    return hold;
  }

  /** {@link #LATER} two-server commits of x and z, each decided by x's region's primary. */
  private void manyLaterDecisions() {
    for (int i = 0; i < LATER; i++) {
      TxResult r = write(a, x, 100 + i, z, 1000 + i).txCommit();
      assertTrue(r.committed(), r.detail());
    }
  }

  /** A gauge of server {@code id} (0 if not registered). */
  private double gauge(int id, String name) {
    Gauge g = cluster.server(id).metrics().registry().find(name).gauge();
    return g == null ? 0 : g.value();
  }

  /**
   * Waits (bounded) until no server holds a pinned decision, as decider or as a backup's copy: the
   * reaper asks each tick; a pin may be bumped by a handler meanwhile, so this polls until it
   * settles rather than reading it once.
   */
  private void pinsSettleToZero() throws InterruptedException {
    double left = -1;
    for (int i = 0; i < 600; i++) {
      left = 0;
      for (MemoryServer s : List.copyOf(cluster.servers)) {
        left += gauge(s.serverId(), "ferrite.tx.decisions.pinned");
        left += gauge(s.serverId(), "ferrite.tx.decisions.pinned.copies");
      }
      if (left == 0) {
        return;
      }
      Thread.sleep(100);
    }
    assertEquals(0, left, "pinned decisions left after every participant applied");
  }

  /** Every object readable, unlocked, and a transaction writing all three commits. */
  private void nothingLocked(long xv, long yv) {
    TxClient c = new TxClient(cluster.client());
    assertEquals(yv, TxCluster.readWhenClear(c, y));
    assertEquals(xv, TxCluster.readWhenClear(c, x));
    Transaction t = c.txBegin();
    t.txReadAll(List.of(x, y, z));
    t.txWrite(x, num(7));
    t.txWrite(y, num(8));
    t.txWrite(z, num(9));
    TxResult r = t.txCommit();
    assertTrue(r.committed(), r.detail());
    assertEquals(8, TxCluster.readWhenClear(c, y));
  }

  @Test
  void aParticipantRestartedAfterManyLaterDecisionsStillLearnsItsCommit() throws Exception {
    start(1);
    TxLogsTesting.pauseAppenders(true); // only what answering threads wrote is in the files
    commitWithoutTheOthersCommit().drop();
    String name = cluster.crash(other);
    TxLogsTesting.pauseAppenders(false);
    manyLaterDecisions();
    // The crashed participant's pin cannot go while it is down (the others' may not have yet).
    assertTrue(gauge(decider, "ferrite.tx.decisions.pinned") >= 1, "the crashed one's pin");
    cluster.startServer(name, settings);
    cluster.awaitServers(3);
    TxClient fresh = new TxClient(cluster.client());
    // Rebuilt from its log: the LOCK record's object locked again until the decider answers.
    assertEquals(
        20, TxCluster.readWhenClear(fresh, y), "the acknowledged commit applied, not lost");
    nothingLocked(100 + LATER - 1, 20);
    pinsSettleToZero();
  }

  @Test
  void theDeciderRestartedFromItsCheckpointedLogStillAnswersCommit() throws Exception {
    start(1);
    TxLogsTesting.pauseAppenders(true);
    commitWithoutTheOthersCommit().drop();
    String otherName = cluster.crash(other);
    TxLogsTesting.pauseAppenders(false);
    Path log;
    try (var files = Files.walk(dir)) {
      log =
          files
              .filter(f -> f.getFileName().toString().equals("region-" + x.region() + ".log"))
              .filter(f -> f.toString().contains("/" + cluster.server(decider).name() + "/"))
              .findFirst()
              .orElseThrow();
    }
    manyLaterDecisions();
    // The decider's log (tx.log.checkpoint 4k) is rewritten (it shrinks) after the pinned decision,
    // on a reaper tick: commits go on until it did (a bounded wait).
    long largest = Files.size(log);
    boolean rewritten = false;
    for (int i = 0; i < 4000 && !rewritten; i++) {
      write(a, x, 5000 + i, z, 6000 + i).txCommit();
      long now = Files.size(log);
      rewritten = now < largest;
      largest = Math.max(largest, now);
      Thread.sleep(5); // the reaper checkpoints on its tick (250 ms): some ticks pass meanwhile
    }
    assertTrue(
        rewritten,
        "the decider's log was checkpointed after the pinned decision (checkpoints in this JVM: "
            + TxLogsTesting.checkpoints()
            + ", the log's largest size "
            + largest
            + " bytes)");
    String deciderName = cluster.crash(decider);
    cluster.startServer(deciderName, settings);
    cluster.awaitServers(2);
    cluster.startServer(otherName, settings);
    cluster.awaitServers(3);
    TxClient fresh = new TxClient(cluster.client());
    assertEquals(
        20, TxCluster.readWhenClear(fresh, y), "the acknowledged commit applied, not lost");
    nothingLocked(TxCluster.readWhenClear(fresh, x), 20);
    pinsSettleToZero();
  }

  @Test
  void aBackupPromotedAfterManyLaterDecisionsStillLearnsItsCommit() throws Exception {
    // A long lock lease: the other participant does not ask its decider before it dies, and its
    // promoted backup asks once the fresh lease it gives the transaction lapsed.
    settings.put(TxConfig.LOCK_LEASE, "8s");
    start(2);
    LocalFaults.Hold hold = commitWithoutTheOthersCommit();
    manyLaterDecisions();
    assertEquals(-1, a.probe(y), "the other participant has not asked its decider yet");
    cluster.crash(other); // its COMMIT still held: it dies before applying it
    hold.drop();
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    assertEquals(20, TxCluster.readWhenClear(fresh, y), "the promoted backup applied the commit");
    nothingLocked(100 + LATER - 1, 20);
    pinsSettleToZero();
  }

  /**
   * Replicas 2: the decider's primary dies after 256 later decisions; its promoted backup took the
   * pin over with the DECIDE record, and answers the other participant (alive, its COMMIT lost),
   * which asks once its lock lease lapsed: commit.
   */
  @Test
  void aPromotedDeciderKeepsThePinsOfItsBackupCopy() throws Exception {
    settings.put(TxConfig.LOCK_LEASE, "8s");
    start(2);
    commitWithoutTheOthersCommit().drop();
    manyLaterDecisions();
    assertEquals(-1, a.probe(y), "the other participant has not asked its decider yet");
    cluster.crash(decider);
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    assertEquals(20, TxCluster.readWhenClear(fresh, y), "the promoted decider answered commit");
    nothingLocked(TxCluster.readWhenClear(fresh, x), 20);
    pinsSettleToZero();
  }

  @Test
  void pinsGoOnceEveryParticipantAppliedAndAbortsAreNeverPinned() throws Exception {
    start(2);
    for (int i = 0; i < 40; i++) {
      TxResult r = write(a, x, 100 + i, y, 200 + i).txCommit();
      assertTrue(r.committed(), r.detail());
    }
    pinsSettleToZero();
    // An aborted transaction (its coordinator stopped after LOCK): the other participant learns
    // abort from the decider once its lease lapsed, and keeps its value; no pin is taken.
    TxResult dead = write(a, x, 1, y, 2).commit(Transaction.Stop.AFTER_LOCK);
    assertFalse(dead.committed(), "the coordinator stopped after LOCK");
    TxClient fresh = new TxClient(cluster.client());
    assertEquals(239, TxCluster.readWhenClear(fresh, y), "unlocked with its old value");
    assertEquals(139, TxCluster.readWhenClear(fresh, x));
    assertEquals(0, gauge(decider, "ferrite.tx.decisions.pinned"), "an abort is not pinned");
    nothingLocked(139, 239);
    pinsSettleToZero();
  }
}
