package io.ferrite.kernel.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.testing.SerializabilityChecker.Result;
import io.ferrite.kernel.testing.SerializabilityChecker.Type;
import io.ferrite.kernel.testing.SimulatedTxStore.Ending;
import io.ferrite.kernel.testing.SimulatedTxStore.Form;
import io.ferrite.kernel.testing.SimulatedTxStore.Mode;
import io.ferrite.kernel.testing.SimulatedTxStore.Step;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import io.ferrite.kernel.testing.TxHistory.Txn;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Phaser;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The checker on concurrent histories of {@link SimulatedTxStore}s run by several threads: every
 * history of the strict store is accepted; the weaker stores' anomalies are found, and named.
 */
@ExtendWith(SeedExtension.class)
class SimulatedStoresCheckTest {
  private static final int THREADS = 4;
  private static final int KEYS = 6;

  private static int count(TxHistory h, Outcome outcome) {
    int n = 0;
    for (Txn t : h.transactions()) {
      n += t.outcome() == outcome ? 1 : 0;
    }
    return n;
  }

  @ParameterizedTest
  @EnumSource(Form.class)
  void strictTwoPhaseLockingIsAccepted(Form form, Random random) {
    SimulatedTxStore store = new SimulatedTxStore(Mode.TWO_PHASE_LOCKING, form, KEYS);
    int perThread = 1500;
    try (TestThreads threads = new TestThreads()) {
      for (int t = 0; t < THREADS; t++) {
        int client = t;
        Random r = new Random(random.nextLong());
        threads.start(
            "client-" + t,
            () -> {
              for (int i = 0; i < perThread; i++) {
                store.run(client, store.randomPlan(r), SimulatedTxStore.randomEnding(r), r, null);
              }
            });
      }
    }
    TxHistory h = store.history;
    assertEquals(THREADS * perThread, h.transactions().size());
    Result result = SerializabilityChecker.checkStrict(h);
    System.out.println(form + " 2PL: " + result.summary());
    assertTrue(result.valid(), result::toString);
    // Not vacuous: most transactions are in the graph, UNKNOWN ones seen by others among them.
    int committed = count(h, Outcome.COMMITTED);
    assertTrue(committed > THREADS * perThread / 2, () -> committed + " committed");
    assertTrue(result.checked() > committed, result::toString);
  }

  /**
   * Snapshot isolation, in rounds: every thread begins (takes its snapshot), reads and writes, then
   * all meet before anyone commits. Random rounds, and every tenth round two pairs of threads play
   * the on-call doctors (each reads both keys of its pair, writes one): write skew, so each run has
   * some. SI forbids every cycle with fewer than two rw edges, so the checker must find G2 and
   * nothing weaker.
   */
  @ParameterizedTest
  @EnumSource(Form.class)
  void snapshotIsolationWriteSkewIsFound(Form form, Random random) {
    SimulatedTxStore store = new SimulatedTxStore(Mode.SNAPSHOT_ISOLATION, form, KEYS);
    int rounds = 400;
    Phaser phaser = new Phaser(THREADS);
    try (TestThreads threads = new TestThreads(phaser::forceTermination)) {
      for (int t = 0; t < THREADS; t++) {
        int client = t;
        Random r = new Random(random.nextLong());
        threads.start(
            "client-" + t,
            () -> {
              for (int round = 0; round < rounds && !phaser.isTerminated(); round++) {
                List<Step> plan;
                Ending ending;
                if (round % 10 == 0) {
                  int x = (client / 2) * 2; // threads 0,1 on keys 0,1; threads 2,3 on 2,3
                  plan =
                      List.of(
                          new Step(x, false),
                          new Step(x + 1, false),
                          new Step(x + client % 2, true));
                  ending = Ending.COMMIT;
                } else {
                  plan = store.randomPlan(r);
                  ending = SimulatedTxStore.randomEnding(r);
                }
                store.run(client, plan, ending, r, phaser::arriveAndAwaitAdvance);
                phaser.arriveAndAwaitAdvance(); // every commit of the round before a new snapshot
              }
            });
      }
    }
    assertFalse(phaser.isTerminated(), "a client failed");
    TxHistory h = store.history;
    assertEquals(THREADS * rounds, h.transactions().size());
    Result serializable = SerializabilityChecker.checkSerializable(h);
    assertEquals(Set.of(Type.G2), serializable.types(), serializable::toString);
    Result strict = SerializabilityChecker.checkStrict(h);
    System.out.println(
        form + " SI: " + strict.summary() + ", " + store.conflicts + " first-committer aborts");
    assertTrue(strict.types().contains(Type.G2), strict::toString);
    assertTrue(Set.of(Type.G2, Type.REALTIME).containsAll(strict.types()), strict::toString);
  }

  /**
   * A serializable store (one global lock) whose read-only transactions sometimes read the state of
   * {@link SimulatedTxStore#STALE_LAG} commits ago: serializable (each such read is a consistent
   * snapshot, placed back in time), but the commits it misses completed before it began. Only the
   * real-time edges can catch it.
   */
  @ParameterizedTest
  @EnumSource(Form.class)
  void staleReadsAreRealTimeViolations(Form form, Random random) {
    SimulatedTxStore store = new SimulatedTxStore(Mode.STALE_READS, form, KEYS);
    int perThread = 1000;
    try (TestThreads threads = new TestThreads()) {
      for (int t = 0; t < THREADS; t++) {
        int client = t;
        Random r = new Random(random.nextLong());
        threads.start(
            "client-" + t,
            () -> {
              for (int i = 0; i < perThread; i++) {
                store.run(client, store.randomPlan(r), SimulatedTxStore.randomEnding(r), r, null);
              }
            });
      }
    }
    TxHistory h = store.history;
    Result serializable = SerializabilityChecker.checkSerializable(h);
    assertTrue(serializable.valid(), serializable::toString);
    Result strict = SerializabilityChecker.checkStrict(h);
    System.out.println(form + " stale reads: " + strict.summary());
    assertEquals(Set.of(Type.REALTIME), strict.types(), strict::toString);
  }
}
