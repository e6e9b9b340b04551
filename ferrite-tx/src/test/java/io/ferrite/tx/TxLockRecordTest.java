package io.ferrite.tx;

import static io.ferrite.tx.TxCommitTest.num;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.local.LocalFaults;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.tx.server.TxLogsTesting;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicas 1, a two-server commit reported on the decider's OK (docs/TX.md "Commit"): the other
 * participant's LOCK record is in its own log before its LOCK OK leaves, so a crash of its process
 * (its log not closed cleanly: what was queued to the appender is dropped, {@link
 * TxLogsTesting#crashOnClose}; the appenders paused meanwhile, so only what an answering thread
 * wrote is in the file) before it applies the COMMIT loses nothing. Restarted from its log, its
 * region keeps the transaction's objects locked and asks the decider (OUTCOME): applied on commit
 * (the decider restarted too answers from its DECIDE records), unlocked with the old values on
 * abort; nothing stays locked.
 */
@ExtendWith(SeedExtension.class)
class TxLockRecordTest {
  @TempDir Path dir;
  TxCluster cluster;
  TxClient a;
  TxClient b;

  /** Server settings: {@code tx.lock.lease} 1 s (a held transaction does not lapse meanwhile). */
  final Map<String, String> settings = new HashMap<>(Map.of(TxConfig.LOCK_LEASE, "1s"));

  @AfterEach
  void stop() throws Exception {
    TxLogsTesting.pauseAppenders(false);
    TxLogsTesting.crashOnClose(false);
    TxLogsTesting.fsync(null);
    if (cluster != null) {
      cluster.close();
    }
  }

  private void start() throws Exception {
    cluster = new TxCluster(dir, 0, false, 1);
    cluster.startServer("tx0", settings);
    cluster.startServer("tx1", settings);
    cluster.awaitServers(2);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
  }

  /** {x = 1, y = 2}: x in the decider region (the lower id), y on the other server. */
  private FatPointer[] twoServers() throws InterruptedException {
    return cluster.twoServers(a, num(1), b, num(2));
  }

  private Transaction transfer(TxClient c, FatPointer[] p, long x, long y) {
    Transaction t = c.txBegin();
    t.txReadAll(List.of(p[0], p[1]));
    t.txWrite(p[0], num(x));
    t.txWrite(p[1], num(y));
    return t;
  }

  /** A commit of a transaction writing both objects: nothing is left locked. */
  private void commitsAgain(FatPointer[] p) {
    TxClient c = new TxClient(cluster.client());
    TxResult r = transfer(c, p, 30, 40).txCommit();
    assertTrue(r.committed(), r.detail());
    assertEquals(30, TxCluster.readWhenClear(c, p[0]));
    assertEquals(40, TxCluster.readWhenClear(c, p[1]));
  }

  /** Commits {10, 20} with the other participant's COMMIT dropped in the network. */
  private void commitWithoutTheOthersCommit(FatPointer[] p) {
    int other = a.view(p[1].region()).primary();
    LocalFaults.Hold hold =
        cluster.network.faults().holdNextRpc(other, TxProtocol.SERVER_SERVICE, TxProtocol.COMMIT);
    TxResult r = transfer(a, p, 10, 20).txCommit();
    assertTrue(r.committed(), r.detail());
    assertTrue(hold.isCaught(), "the other participant's COMMIT was sent (and not waited for)");
    hold.drop();
    assertEquals(-1, a.probe(p[1]), "locked at the other participant until it applies");
  }

  @Test
  void theOtherParticipantCrashedBeforeItsCommitAppliesItAfterItsRestart() throws Exception {
    start();
    FatPointer[] p = twoServers();
    int other = a.view(p[1].region()).primary();
    // Only what the answering threads wrote is in the files at the crash (nothing queued).
    TxLogsTesting.pauseAppenders(true);
    commitWithoutTheOthersCommit(p);
    String name = cluster.crash(other);
    TxLogsTesting.pauseAppenders(false);
    cluster.startServer(name, settings);
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    // The first read that succeeds sees the commit (a read of the locked object waits): never 2.
    assertEquals(20, TxCluster.readWhenClear(fresh, p[1]));
    assertEquals(10, TxCluster.readWhenClear(fresh, p[0]));
    commitsAgain(p);
  }

  @Test
  void bothParticipantsCrashedTheRestartedDeciderStillAnswersCommitted() throws Exception {
    start();
    FatPointer[] p = twoServers();
    int decider = a.view(p[0].region()).primary();
    int other = a.view(p[1].region()).primary();
    TxLogsTesting.pauseAppenders(true);
    commitWithoutTheOthersCommit(p);
    String otherName = cluster.crash(other);
    String deciderName = cluster.crash(decider);
    TxLogsTesting.pauseAppenders(false);
    cluster.startServer(otherName, settings);
    cluster.awaitServers(1);
    TxClient fresh = new TxClient(cluster.client());
    // Rebuilt from its log with the decider down: the LOCK record keeps its object locked (it
    // cannot learn the outcome), never unlocked at the old value.
    assertEquals(-1, fresh.probe(p[1]), "the LOCK record's object is locked again");
    cluster.startServer(deciderName, settings);
    cluster.awaitServers(2);
    assertEquals(20, TxCluster.readWhenClear(fresh, p[1]));
    assertEquals(10, TxCluster.readWhenClear(fresh, p[0]));
    commitsAgain(p);
  }

  @Test
  void aLockRecordOfATransactionTheDeciderAbortedIsUnlockedWithTheOldValues() throws Exception {
    settings.put(TxConfig.LOCK_LEASE, "300ms"); // the decider aborts it once its lease lapses
    start();
    FatPointer[] p = twoServers();
    int other = a.view(p[1].region()).primary();
    TxResult dead = transfer(a, p, 10, 20).commit(Transaction.Stop.AFTER_LOCK);
    assertFalse(dead.committed(), "the coordinator stopped after LOCK");
    cluster.startServer(cluster.crash(other), settings);
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    assertEquals(2, TxCluster.readWhenClear(fresh, p[1]));
    assertEquals(1, TxCluster.readWhenClear(fresh, p[0]));
    commitsAgain(p);
  }

  /**
   * {@code tx.log.sync=always}, the other participant's fsync held: its LOCK OK does not leave (the
   * coordinator sends no COMMIT to the decider) until the fsync covering its LOCK record completed.
   */
  @Test
  void noLockOkLeavesBeforeItsRecordIsOnDisk() throws Exception {
    settings.put(TxConfig.LOG_SYNC, "always");
    cluster = new TxCluster(dir, 0, false, 1);
    Map<String, TxLogTest.HeldFsync> fsyncs = new HashMap<>();
    for (String name : List.of("tx0", "tx1")) {
      TxLogTest.HeldFsync f = new TxLogTest.HeldFsync();
      TxLogsTesting.fsync(f); // taken by the service as it starts: one per server
      fsyncs.put(name, f);
      cluster.startServer(name, settings);
    }
    TxLogsTesting.fsync(null);
    cluster.awaitServers(2);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
    FatPointer[] p = twoServers();
    int decider = a.view(p[0].region()).primary();
    TxLogTest.HeldFsync held = fsyncs.get(cluster.server(a.view(p[1].region()).primary()).name());
    LocalFaults.Hold deciderCommit =
        cluster.network.faults().holdNextRpc(decider, TxProtocol.SERVER_SERVICE, TxProtocol.COMMIT);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService committer =
        Executors.newSingleThreadExecutor(r -> new Thread(r, "tx-lock-record-test-committer"));
    Future<TxResult> commit;
    try {
      held.hold = release;
      Transaction t = transfer(a, p, 10, 20);
      commit = committer.submit(t::txCommit);
      boolean entered = false;
      for (int i = 0; i < 6000 && !entered && !commit.isDone(); i++) {
        entered = held.entered.tryAcquire(10, TimeUnit.MILLISECONDS);
      }
      assertTrue(entered, "the other participant never fsynced its LOCK record");
      Thread.sleep(50); // a LOCK OK sent before the fsync would bring the decider's COMMIT
      assertFalse(deciderCommit.isCaught(), "a LOCK OK left before its record's fsync");
      assertFalse(commit.isDone());
    } finally {
      held.hold = null; // released whatever happened: a held fsync holds shutdown too
      release.countDown();
      committer.shutdown();
    }
    assertTrue(deciderCommit.awaitCaught(Duration.ofSeconds(60)), "COMMIT sent once on disk");
    deciderCommit.release();
    TxResult r = commit.get(60, TimeUnit.SECONDS);
    assertTrue(r.committed(), r.detail());
    assertEquals(10, TxCluster.readWhenClear(a, p[0]));
    assertEquals(20, TxCluster.readWhenClear(a, p[1]));
    assertTrue(committer.awaitTermination(60, TimeUnit.SECONDS));
  }
}
