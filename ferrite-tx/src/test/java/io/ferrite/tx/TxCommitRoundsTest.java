package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.local.LocalFaults;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.file.Path;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The two-server commit's last round (FaRM §3.4: commit is reported after the first COMMIT-PRIMARY
 * ack). With backups ({@code tx.replicas} 2) every participant's LOCK record is at its backups, so
 * the coordinator reports commit on the decider's OK and does not wait for the other participant's
 * COMMIT: the test holds that COMMIT in the network (the local fabric's {@link LocalFaults.Hold})
 * and the commit returns while its writes there are still locked; released, or dropped (the
 * participant's reaper asks the decider), they are applied. Without backups (replicas 1) the other
 * participant's LOCK record is in its own log before it answers LOCK: the coordinator does not wait
 * either.
 */
@ExtendWith(SeedExtension.class)
class TxCommitRoundsTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;
  TxClient a;
  TxClient b;

  void start(int replicas) throws Exception {
    cluster = new TxCluster(dir, 2, false, replicas);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
  }

  /** {x, y}: x in the decider region (the lower id), y on the other server. */
  FatPointer[] twoServers() throws InterruptedException {
    return cluster.twoServers(a, TxCommitTest.num(1), b, TxCommitTest.num(2));
  }

  Transaction transfer(FatPointer[] p) {
    Transaction t = a.txBegin();
    t.txReadAll(java.util.List.of(p[0], p[1]));
    t.txWrite(p[0], TxCommitTest.num(10));
    t.txWrite(p[1], TxCommitTest.num(20));
    return t;
  }

  /**
   * Commits {@link #transfer} with the COMMIT to {@code p[1]}'s primary (not the decider) held in
   * the network: the commit must return committed, and that COMMIT must have been sent.
   */
  LocalFaults.Hold commitWithTheOthersCommitHeld(FatPointer[] p) {
    int other = a.view(p[1].region()).primary();
    LocalFaults.Hold hold =
        cluster.network.faults().holdNextRpc(other, TxProtocol.SERVER_SERVICE, TxProtocol.COMMIT);
    TxResult r = transfer(p).txCommit();
    assertTrue(r.committed(), r.detail());
    assertTrue(hold.isCaught(), "the other participant's COMMIT was sent");
    return hold;
  }

  /** A read of {@code p} that waits out a lock held for longer than one read's patience. */
  long readWhenClear(FatPointer p) {
    for (int i = 0; ; i++) {
      try {
        return TxCommitTest.num(b.lockFreeRead(p));
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.BUSY || i >= 10) {
          throw e;
        }
      }
    }
  }

  @Test
  void withBackupsTheOtherParticipantsCommitIsNotWaitedFor() throws Exception {
    start(2);
    FatPointer[] p = twoServers();
    LocalFaults.Hold hold = commitWithTheOthersCommitHeld(p);
    assertEquals(-1, a.probe(p[1]), "committed while the other participant has not applied yet");
    hold.release();
    assertEquals(10, readWhenClear(p[0]));
    assertEquals(20, readWhenClear(p[1]));
    assertEquals(
        20,
        TxCluster.backupCopy(cluster, a.view(p[0].region()).primary(), p[1]).payload()[0],
        "its backup has the write too");
  }

  @Test
  void withBackupsALostCommitIsFinishedFromTheDecider() throws Exception {
    start(2);
    FatPointer[] p = twoServers();
    LocalFaults.Hold hold = commitWithTheOthersCommitHeld(p);
    hold.drop(); // never delivered: the participant's reaper asks the decider once its lease lapses
    assertEquals(20, readWhenClear(p[1]));
    assertEquals(10, readWhenClear(p[0]));
  }

  /**
   * Replicas 1: the other participant's LOCK record is in its own log (written before its LOCK OK),
   * so its COMMIT is not waited for either; its object stays locked until it applies. Its crash and
   * restart before it applies: TxLockRecordTest.
   */
  @Test
  void withoutBackupsTheOtherParticipantsCommitIsNotWaitedForEither() throws Exception {
    start(1);
    FatPointer[] p = twoServers();
    LocalFaults.Hold hold = commitWithTheOthersCommitHeld(p);
    assertEquals(-1, a.probe(p[1]), "committed while the other participant has not applied yet");
    hold.release();
    assertEquals(10, readWhenClear(p[0]));
    assertEquals(20, readWhenClear(p[1]));
  }
}
