package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Transaction#txReadAll}: the reads of a transaction in flight together, one batch per
 * primary. Its copies are the read set exactly as single reads make it (same payloads, same
 * versions, VALIDATE and LOCK check them); a copy found locked or torn is read again as a single
 * read is; a freed object is NOT_FOUND. Two servers over the local fabric, and over shm ({@code
 * real}).
 */
@ExtendWith(SeedExtension.class)
class TxReadAllTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;
  TxClient a;
  TxClient b;

  void start(boolean real) throws Exception {
    cluster = new TxCluster(dir, 2, real);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
  }

  /** Four objects: two on a's server, two on b's. */
  List<FatPointer> objects(Random random) {
    List<FatPointer> out = new ArrayList<>();
    out.add(TxCommitTest.make(a, TxCommitTest.bytes(random, 200)));
    out.add(TxCommitTest.make(b, TxCommitTest.bytes(random, 8)));
    out.add(TxCommitTest.make(a, TxCommitTest.bytes(random, 700)));
    out.add(TxCommitTest.make(b, TxCommitTest.bytes(random, 64)));
    assertNotEquals(
        a.view(out.get(0).region()).primary(), a.view(out.get(1).region()).primary(), "servers");
    return out;
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void readsTheSameCopiesAsSingleReadsWithOneReadEach(boolean real, Random random)
      throws Exception {
    start(real);
    List<FatPointer> p = objects(random);
    Transaction single = a.txBegin();
    List<byte[]> expected = new ArrayList<>();
    p.forEach(x -> expected.add(single.txRead(x)));

    long before = a.oneSidedReads();
    Transaction all = a.txBegin();
    List<byte[]> got = all.txReadAll(p);
    assertEquals(p.size(), a.oneSidedReads() - before, "one one-sided read per object");
    for (int i = 0; i < p.size(); i++) {
      assertArrayEquals(expected.get(i), got.get(i), "object " + i);
    }
    assertEquals(single.readVersions(), all.readVersions(), "the same read set, same versions");
    // A repeated read is the same copy (no new read), a pointer twice the same payload.
    before = a.oneSidedReads();
    List<byte[]> again = all.txReadAll(List.of(p.get(1), p.get(1), p.get(0)));
    assertEquals(0, a.oneSidedReads() - before, "already in the read set");
    assertArrayEquals(expected.get(1), again.get(0));
    assertArrayEquals(expected.get(1), again.get(1));
    assertArrayEquals(expected.get(0), again.get(2));
    // VALIDATE checks these versions: one object only read changes under it, the commit aborts.
    all.txWrite(p.get(0), new byte[] {1});
    Transaction other = b.txBegin();
    other.txWrite(p.get(3), new byte[] {2});
    assertTrue(other.txCommit().committed());
    TxResult r = all.txCommit();
    assertEquals(TxResult.Reason.VALIDATION, r.reason(), r.detail());
    // With nothing changed, the same reads commit (LOCK checks the versions read for the writes).
    Transaction ok = a.txBegin();
    List<byte[]> now = ok.txReadAll(p);
    ok.txWrite(p.get(0), now.get(1));
    ok.txWrite(p.get(1), new byte[] {3});
    assertTrue(ok.txCommit().committed());
    assertArrayEquals(now.get(1), java.util.Arrays.copyOf(b.lockFreeRead(p.get(0)), 8));
  }

  @Test
  void aTransactionReadsItsOwnWritesAndAFreedObjectIsNotFound(Random random) throws Exception {
    start(false);
    List<FatPointer> p = objects(random);
    Transaction t = a.txBegin();
    t.txWrite(p.get(1), new byte[] {9, 9});
    long before = a.oneSidedReads();
    List<byte[]> got = t.txReadAll(List.of(p.get(0), p.get(1)));
    assertEquals(1, a.oneSidedReads() - before, "p1 was read by its write: only p0 is read");
    assertEquals(9, got.get(1)[0]);
    t.txFree(p.get(2));
    FerriteException e =
        assertThrows(FerriteException.class, () -> t.txReadAll(List.of(p.get(0), p.get(2))));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(t.txCommit().committed());

    Transaction late = b.txBegin(); // a stale fat pointer: another transaction freed it
    e = assertThrows(FerriteException.class, () -> late.txReadAll(List.of(p.get(3), p.get(2))));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains(p.get(2).toString()), e.getMessage());
  }

  /**
   * A copy found locked (a coordinator that stopped after LOCK holds both objects until the
   * participants' reapers abort it, {@code tx.lock.lease} 300 ms) is read again until it is clear,
   * as a single read is: the copies are the committed ones, never the held transaction's writes.
   */
  @Test
  void aLockedCopyIsReadAgainUntilItIsClear(Random random) throws Exception {
    start(false);
    List<FatPointer> p = objects(random);
    Transaction single = b.txBegin();
    byte[] x0 = single.txRead(p.get(0));
    byte[] x1 = single.txRead(p.get(1));
    Transaction holder = a.txBegin();
    holder.txWrite(p.get(0), new byte[] {7});
    holder.txWrite(p.get(1), new byte[] {7});
    holder.commit(Transaction.Stop.AFTER_LOCK);
    assertEquals(-1, a.probe(p.get(0)), "locked by the stopped coordinator");
    long before = a.oneSidedReads();
    Transaction t = a.txBegin();
    List<byte[]> got = t.txReadAll(List.of(p.get(0), p.get(1)));
    assertTrue(a.oneSidedReads() - before > 2, "read again while locked");
    assertArrayEquals(x0, got.get(0));
    assertArrayEquals(x1, got.get(1));
    assertEquals(single.readVersions(), t.readVersions());
  }

  /**
   * Torn copies (the local fabric tears every read against a racing write) are never handed out:
   * while a writer rewrites two objects with uniform payloads, every txReadAll copy is uniform, and
   * a transaction that read both by txReadAll and wrote them commits only if both were current.
   */
  @Test
  void tornCopiesAreReadAgain(Random random) throws Exception {
    start(false);
    FatPointer x = TxCommitTest.make(a, new byte[600]);
    FatPointer y = TxCommitTest.make(b, new byte[600]);
    cluster.faults(false);
    TxClient w = new TxClient(cluster.client());
    java.util.concurrent.atomic.AtomicBoolean done =
        new java.util.concurrent.atomic.AtomicBoolean();
    try (io.ferrite.fabric.testing.TestThreads bg =
        new io.ferrite.fabric.testing.TestThreads(() -> done.set(true))) {
      bg.start(
          "writer",
          () -> {
            for (int i = 0; i < 100 && !done.get(); i++) {
              FatPointer p = i % 2 == 0 ? x : y;
              Transaction t = w.txBegin();
              byte[] now = t.txRead(p);
              byte[] next = new byte[600];
              java.util.Arrays.fill(next, (byte) (now[0] + 1));
              t.txWrite(p, next);
              t.txCommit();
            }
            done.set(true);
          });
      while (!done.get()) {
        Transaction t = a.txBegin();
        List<byte[]> got = t.txReadAll(List.of(x, y));
        TxLockFreeReadTest.checkUniform(got.get(0), "txReadAll of x");
        TxLockFreeReadTest.checkUniform(got.get(1), "txReadAll of y");
        t.txWrite(x, got.get(0));
        t.txWrite(y, got.get(1));
        t.txCommit();
      }
    }
    cluster.network.faults().heal();
  }
}
