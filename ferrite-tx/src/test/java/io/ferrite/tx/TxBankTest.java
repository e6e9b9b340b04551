package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bank transfers between accounts on two memory servers, from several client threads, while an
 * auditor runs read-only transactions over every account: each committed audit sees the constant
 * total, and so do lock-free reads at the end. Over the local fabric every one-sided read is torn
 * on purpose (half copied, a pause, the rest); over shm (real) the copies race the servers' writes.
 *
 * <p>The history (each transaction's real-time start and end, the versions it read and installed)
 * is recorded as {@link Op}s. Until the strict-serializability checker lands in {@code
 * io.ferrite.kernel.testing} (issue #13, TX2), {@link #checkNoLostUpdate} checks what versions
 * alone can: no two committed transactions installed the same version of an object (a lost update),
 * and each installed the version after the one it read. That list is the checker's hook.
 */
@ExtendWith(SeedExtension.class)
class TxBankTest {
  static final int ACCOUNTS = 12;
  static final long START = 100;

  /** One finished transaction of the history. */
  record Op(
      long startNanos,
      long endNanos,
      boolean committed,
      Map<FatPointer, Long> read,
      Map<FatPointer, Long> written) {}

  @TempDir Path dir;
  TxCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void transfersKeepTheTotalAndEveryCommittedAuditSeesIt(boolean real, TestSeed seed)
      throws Exception {
    cluster = new TxCluster(dir, 2, real);
    cluster.awaitServers(2);
    TxClient a = new TxClient(cluster.client());
    TxClient b = new TxClient(cluster.client());
    List<FatPointer> accounts = new ArrayList<>();
    for (int i = 0; i < ACCOUNTS; i++) {
      accounts.add(TxCommitTest.make(i % 2 == 0 ? a : b, TxCommitTest.num(START)));
    }
    assertTrue(
        a.view(accounts.get(0).region()).primary() != a.view(accounts.get(1).region()).primary());
    // real: the clients read over shm (they map the region files), not tcp.
    assertEquals(
        real, a.ferrite().connection(a.view(accounts.get(0).region()).primary()).mapsRegions());
    if (!real) {
      cluster.network.faults().tearWait(Duration.ofMillis(1));
      cluster.network.faults().tearReads(true);
    }
    ConcurrentLinkedQueue<Op> history = new ConcurrentLinkedQueue<>();
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong commits = new AtomicLong();
    AtomicLong audits = new AtomicLong();
    CountDownLatch transfersDone = new CountDownLatch(3);
    TxClient shared = new TxClient(cluster.client());
    try (TestThreads bg = new TestThreads(() -> done.set(true))) {
      for (int w = 0; w < 3; w++) {
        Random random = new Random(seed.value() + w);
        TxClient c = w == 0 ? shared : new TxClient(cluster.client());
        bg.start(
            "transfers-" + w,
            () -> {
              try {
                transfers(c, random, accounts, history, commits, done);
              } finally {
                transfersDone.countDown();
              }
            });
      }
      bg.start(
          "auditor",
          () -> {
            // Audits race the transfers, then a few more run once they stopped (so some commit,
            // however the threads were scheduled).
            while (!done.get() && (transfersDone.getCount() > 0 || audits.get() < 3)) {
              long start = System.nanoTime();
              Transaction t = shared.txBegin();
              long sum = 0;
              for (FatPointer p : accounts) {
                long v = TxCommitTest.num(t.txRead(p));
                assertTrue(v >= 0, "a negative balance " + v);
                sum += v;
              }
              TxResult r = t.txCommit();
              history.add(
                  new Op(start, System.nanoTime(), r.committed(), t.readVersions(), Map.of()));
              if (r.committed()) {
                assertEquals(ACCOUNTS * START, sum, "a committed audit saw another total");
                audits.incrementAndGet();
              }
            }
          });
      // The foreground waits for the threads (closing bg joins them; a failure sets done).
    }
    cluster.network.faults().heal();
    long sum = 0;
    for (FatPointer p : accounts) {
      sum += TxCommitTest.num(a.lockFreeRead(p));
    }
    assertEquals(ACCOUNTS * START, sum, "lock-free reads of every account after the run");
    assertTrue(commits.get() > 0, "no transfer committed");
    assertTrue(audits.get() > 0, "no audit committed");
    checkNoLostUpdate(history);
  }

  private static void transfers(
      TxClient c,
      Random random,
      List<FatPointer> accounts,
      ConcurrentLinkedQueue<Op> history,
      AtomicLong commits,
      AtomicBoolean done) {
    for (int i = 0; i < 120 && !done.get(); i++) {
      int from = random.nextInt(ACCOUNTS);
      int to = (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
      long amount = random.nextInt(20);
      long start = System.nanoTime();
      Transaction t = c.txBegin();
      long x = TxCommitTest.num(t.txRead(accounts.get(from)));
      long y = TxCommitTest.num(t.txRead(accounts.get(to)));
      if (x >= amount) {
        t.txWrite(accounts.get(from), TxCommitTest.num(x - amount));
        t.txWrite(accounts.get(to), TxCommitTest.num(y + amount));
      }
      TxResult r = t.txCommit();
      history.add(
          new Op(start, System.nanoTime(), r.committed(), t.readVersions(), t.writtenVersions()));
      if (r.committed()) {
        commits.incrementAndGet();
      }
    }
  }

  /** See the class comment: no version installed twice, each the successor of the one read. */
  static void checkNoLostUpdate(Iterable<Op> history) {
    Map<FatPointer, Map<Long, Op>> installed = new HashMap<>();
    for (Op op : history) {
      if (!op.committed()) {
        continue;
      }
      for (Map.Entry<FatPointer, Long> w : op.written().entrySet()) {
        assertEquals(
            op.read().get(w.getKey()) + 1, w.getValue(), "installed after the version read");
        Op twice =
            installed.computeIfAbsent(w.getKey(), k -> new HashMap<>()).put(w.getValue(), op);
        assertNull(
            twice, w.getKey() + " version " + w.getValue() + " installed by two transactions");
      }
    }
  }
}
