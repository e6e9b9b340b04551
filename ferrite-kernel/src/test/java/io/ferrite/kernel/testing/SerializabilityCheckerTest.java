package io.ferrite.kernel.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.testing.SerializabilityChecker.Result;
import io.ferrite.kernel.testing.SerializabilityChecker.Type;
import io.ferrite.kernel.testing.TxHistory.Op;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The checker on histories built by hand: each anomaly it must name, and the near misses it must
 * accept. Times are small integers ("nanos"); two transactions overlap unless one ends before the
 * other begins.
 */
@ExtendWith(SeedExtension.class)
class SerializabilityCheckerTest {
  private static final long X = 1;
  private static final long Y = 2;
  private static final Outcome OK = Outcome.COMMITTED;

  private static Result strict(TxHistory h) {
    return SerializabilityChecker.checkStrict(h);
  }

  private static void assertFound(Type type, Result r) {
    assertTrue(r.types().contains(type), "expected " + type + ", got: " + r);
  }

  private static void assertValid(Result r) {
    assertTrue(r.valid(), r::toString);
  }

  // ------------------------------------------------------------------ version form

  @Test
  void writeSkewIsG2() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).read(X, 0).read(Y, 0).write(X, 1).end(10, OK);
    h.begin(2, 1).read(X, 0).read(Y, 0).write(Y, 1).end(11, OK);
    Result r = strict(h);
    assertFound(Type.G2, r);
    assertFalse(r.types().contains(Type.G_SINGLE), r::toString);
    assertFound(Type.G2, SerializabilityChecker.checkSerializable(h));
    // The serial version: the second sees the first's write.
    TxHistory serial = new TxHistory();
    serial.begin(1, 0).read(X, 0).read(Y, 0).write(X, 1).end(10, OK);
    serial.begin(2, 1).read(X, 1).read(Y, 0).write(Y, 1).end(11, OK);
    assertValid(strict(serial));
  }

  @Test
  void lostUpdateIsGSingle() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).read(X, 0).write(X, 1).end(10, OK);
    h.begin(2, 1).read(X, 0).write(X, 2).end(11, OK);
    Result r = strict(h);
    assertFound(Type.G_SINGLE, r);
    String message = r.toString();
    assertTrue(message.contains("T1 -rw(key 1)-> T0") && message.contains("T0 -ww"), message);
    TxHistory serial = new TxHistory();
    serial.begin(1, 0).read(X, 0).write(X, 1).end(10, OK);
    serial.begin(2, 1).read(X, 1).write(X, 2).end(11, OK);
    assertValid(strict(serial));
  }

  @Test
  void writeCycleIsG0() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).write(X, 1).write(Y, 2).end(10, OK);
    h.begin(2, 1).write(X, 2).write(Y, 1).end(11, OK);
    assertFound(Type.G0, strict(h));
    TxHistory ordered = new TxHistory();
    ordered.begin(1, 0).write(X, 1).write(Y, 1).end(10, OK);
    ordered.begin(2, 1).write(X, 2).write(Y, 2).end(11, OK);
    assertValid(strict(ordered));
  }

  @Test
  void abortedReadIsG1a() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).write(X, 5).end(10, Outcome.ABORTED);
    h.begin(2, 20).read(X, 5).end(30, OK);
    assertFound(Type.G1A, strict(h));
    // An aborted write nobody read is no anomaly.
    TxHistory unseen = new TxHistory();
    unseen.begin(1, 0).write(X, 5).end(10, Outcome.ABORTED);
    unseen.begin(2, 20).read(X, 0).end(30, OK);
    assertValid(strict(unseen));
  }

  @Test
  void intermediateReadIsG1b() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).write(X, 1).write(X, 2).end(10, OK);
    h.begin(2, 1).read(X, 1).end(11, OK);
    assertFound(Type.G1B, strict(h));
    TxHistory last = new TxHistory();
    last.begin(1, 0).write(X, 1).write(X, 2).read(X, 2).end(10, OK);
    last.begin(2, 1).read(X, 2).end(11, OK);
    assertValid(strict(last));
  }

  @Test
  void circularInformationFlowIsG1c() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).write(X, 1).read(Y, 1).end(10, OK);
    h.begin(2, 1).write(Y, 1).read(X, 1).end(11, OK);
    Result r = strict(h);
    assertFound(Type.G1C, r);
    assertFalse(r.types().contains(Type.G0), r::toString);
  }

  @Test
  void staleReadAfterACommittedWriteIsARealTimeViolation() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).read(X, 0).write(X, 1).end(10, OK);
    h.begin(2, 20).read(X, 0).end(30, OK);
    Result r = strict(h);
    assertFound(Type.REALTIME, r);
    assertEquals(java.util.Set.of(Type.REALTIME), r.types(), r::toString);
    // The plainest cycle: the reader missed a write that completed before it began.
    assertTrue(r.toString().contains("T1 -rw(key 1)-> T0 -rt-> T1  [1 rw edge]"), r::toString);
    // Serializable all the same (the reader goes first), and fine when the two overlap.
    assertValid(SerializabilityChecker.checkSerializable(h));
    TxHistory overlapping = new TxHistory();
    overlapping.begin(1, 0).read(X, 0).write(X, 1).end(10, OK);
    overlapping.begin(2, 10).read(X, 0).end(30, OK);
    assertValid(strict(overlapping));
  }

  @Test
  void readsOfVersionsNobodyInstalled() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).read(X, 7).end(10, OK);
    assertFound(Type.UNWRITTEN_READ, strict(h));
    TxHistory dup = new TxHistory();
    dup.begin(1, 0).write(X, 1).end(10, OK);
    dup.begin(2, 20).write(X, 1).end(30, OK);
    assertFound(Type.DUPLICATE_VERSION, strict(dup));
    TxHistory internal = new TxHistory();
    internal.begin(1, 0).write(X, 3).read(X, 2).end(10, OK);
    assertFound(Type.INTERNAL, strict(internal));
    TxHistory initial = new TxHistory(100);
    initial.begin(1, 0).read(X, 100).write(X, 101).end(10, OK);
    initial.begin(2, 20).read(X, 101).end(30, OK);
    assertValid(strict(initial));
    // Per key: y was made by a setup the history does not show, at version 7.
    initial.initialVersion(Y, 7);
    initial.begin(3, 40).read(Y, 7).read(X, 101).end(50, OK);
    assertValid(strict(initial));
    initial.begin(4, 60).read(Y, 100).end(70, OK);
    assertFound(Type.UNWRITTEN_READ, strict(initial));
  }

  @Test
  void unknownOutcomesMayHaveCommittedButNeedNot() {
    // Never observed: it may not have committed; the reader after it is fine.
    TxHistory unseen = new TxHistory();
    unseen.begin(1, 0).write(X, 1).unknown();
    unseen.begin(2, 20).read(X, 0).end(30, OK);
    Result r = strict(unseen);
    assertValid(r);
    assertEquals(1, r.checked(), r::toString);
    // Observed: it committed, and once seen it cannot be unseen.
    TxHistory seen = new TxHistory();
    seen.begin(1, 0).write(X, 1).unknown();
    seen.begin(2, 20).read(X, 1).end(30, OK);
    assertValid(strict(seen));
    seen.begin(3, 40).read(X, 0).end(50, OK);
    assertFound(Type.REALTIME, strict(seen));
    // A seen UNKNOWN transaction's own reads count: it read x=0 and wrote y=1, then someone
    // wrote x=1 and read y=0 (write skew through the UNKNOWN one).
    TxHistory skew = new TxHistory();
    skew.begin(1, 0).read(X, 0).write(Y, 1).unknown();
    skew.begin(2, 1).read(Y, 0).write(X, 1).end(11, OK);
    skew.begin(3, 20).read(Y, 1).read(X, 1).end(30, OK);
    assertFound(Type.G2, strict(skew));
    // Unfinished at snapshot time is UNKNOWN.
    TxHistory open = new TxHistory();
    open.begin(1, 0).write(X, 1);
    open.begin(2, 20).read(X, 1).end(30, OK);
    assertEquals(Outcome.UNKNOWN, open.transactions().get(0).outcome());
    assertValid(strict(open));
  }

  @Test
  void aFailingAssertionNamesTheAnomalyAndTheTransactions() {
    TxHistory h = new TxHistory();
    h.begin(7, 0).read(X, 0).read(Y, 0).write(X, 1).end(10, OK);
    h.begin(8, 1).read(X, 0).read(Y, 0).write(Y, 1).end(11, OK);
    AssertionError e =
        assertThrows(
            AssertionError.class, () -> SerializabilityChecker.assertStrictlySerializable(h));
    String m = e.getMessage();
    assertTrue(m.startsWith("not strictly serializable"), m);
    assertTrue(m.contains("G2") && m.contains("write skew"), m);
    assertTrue(m.contains("T0 client 7 committed") && m.contains("T1 client 8"), m);
    assertTrue(m.contains("r(2)=v0") && m.contains("w(1)=v1"), m);
  }

  @Test
  void transactionsRecordedElsewhereJoinTheHistory() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).read(X, 0).write(X, 1).end(10, OK);
    // From another process's log, on the same clock: it read x=0 after x=1 committed.
    TxHistory.Txn t = h.record(2, 20, 30, OK, List.of(Op.read(X, 0)));
    assertEquals(1, t.id());
    assertFound(Type.REALTIME, strict(h));
    assertThrows(IllegalArgumentException.class, () -> h.record(3, 50, 40, OK, List.of()));
    // Key objects numbered once each.
    TxHistory named = new TxHistory();
    assertEquals(0, named.key("alice"));
    assertEquals(1, named.key(List.of(7L, 8L)));
    assertEquals(0, named.key("alice"));
    assertEquals(1, named.key(List.of(7L, 8L)));
  }

  @Test
  void mixingTheFormsOnOneKeyIsRefused() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).write(X, 1).append(X, 5).end(10, OK);
    assertThrows(IllegalArgumentException.class, () -> strict(h));
  }

  // ------------------------------------------------------------------ list-append form

  @Test
  void listAppendAcceptsASerialHistory() {
    TxHistory h = new TxHistory();
    h.begin(1, 0).append(X, 1).append(Y, 10).end(10, OK);
    h.begin(2, 5).readList(X, 1).append(X, 2).readList(X, 1, 2).end(15, OK);
    h.begin(3, 20).readList(X, 1, 2).readList(Y, 10).append(Y, 11).end(30, OK);
    h.begin(4, 40).append(X, 3).end(50, OK); // never read: after every element read
    h.begin(5, 41).readList(X, 1, 2).end(45, OK); // concurrent with the append: may miss it
    assertValid(strict(h));
  }

  @Test
  void listAppendAnomalies() {
    TxHistory twice = new TxHistory();
    twice.begin(1, 0).append(X, 1).end(10, OK);
    twice.begin(2, 20).append(X, 1).end(30, OK);
    assertFound(Type.DUPLICATE_ELEMENT, strict(twice));

    TxHistory dupInRead = new TxHistory();
    dupInRead.begin(1, 0).append(X, 1).end(10, OK);
    dupInRead.begin(2, 20).readList(X, 1, 1).end(30, OK);
    assertFound(Type.DUPLICATE_ELEMENT, strict(dupInRead));

    TxHistory notPrefix = new TxHistory();
    notPrefix.begin(1, 0).append(X, 1).end(10, OK);
    notPrefix.begin(2, 0).append(X, 2).end(10, OK);
    notPrefix.begin(3, 20).readList(X, 1, 2).end(30, OK);
    notPrefix.begin(4, 20).readList(X, 2, 1).end(30, OK);
    assertFound(Type.INCOMPATIBLE_ORDER, strict(notPrefix));

    // One transaction's appends seen partly (the later without the earlier), or reversed.
    TxHistory partial = new TxHistory();
    partial.begin(1, 0).append(X, 1).append(X, 2).end(10, OK);
    partial.begin(2, 20).readList(X, 2).end(30, OK);
    assertFound(Type.INCOMPATIBLE_ORDER, strict(partial));
    TxHistory reversed = new TxHistory();
    reversed.begin(1, 0).append(X, 1).append(X, 2).end(10, OK);
    reversed.begin(2, 20).readList(X, 2, 1).end(30, OK);
    assertFound(Type.INCOMPATIBLE_ORDER, strict(reversed));
    TxHistory whole = new TxHistory();
    whole.begin(1, 0).append(X, 1).append(X, 2).end(10, OK);
    whole.begin(2, 20).readList(X, 1, 2).end(30, OK);
    assertValid(strict(whole));

    TxHistory aborted = new TxHistory();
    aborted.begin(1, 0).append(X, 1).end(10, Outcome.ABORTED);
    aborted.begin(2, 20).readList(X, 1).end(30, OK);
    assertFound(Type.G1A, strict(aborted));

    TxHistory intermediate = new TxHistory();
    intermediate.begin(1, 0).append(X, 1).append(X, 2).end(10, OK);
    intermediate.begin(2, 1).readList(X, 1).end(11, OK);
    assertFound(Type.G1B, strict(intermediate));

    TxHistory garbage = new TxHistory();
    garbage.begin(1, 0).readList(X, 9).end(10, OK);
    assertFound(Type.UNWRITTEN_READ, strict(garbage));

    TxHistory internal = new TxHistory();
    internal.begin(1, 0).append(X, 1).readList(X).end(10, OK);
    assertFound(Type.INTERNAL, strict(internal));
  }

  @Test
  void listAppendWriteSkewAndStaleRead() {
    TxHistory skew = new TxHistory();
    skew.begin(1, 0).readList(X).readList(Y).append(X, 1).end(10, OK);
    skew.begin(2, 1).readList(X).readList(Y).append(Y, 2).end(11, OK);
    skew.begin(3, 20).readList(X, 1).readList(Y, 2).end(30, OK);
    assertFound(Type.G2, strict(skew));

    // The append is never read by anyone, yet a read after its commit must see it: the checker
    // orders unread appends after every element read.
    TxHistory stale = new TxHistory();
    stale.begin(1, 0).append(X, 1).end(10, OK);
    stale.begin(2, 20).readList(X).end(30, OK);
    assertFound(Type.REALTIME, strict(stale));
    assertValid(SerializabilityChecker.checkSerializable(stale));

    // Elements interleaved from two transactions: a write cycle.
    TxHistory interleaved = new TxHistory();
    interleaved.begin(1, 0).append(X, 1).append(X, 3).end(10, OK);
    interleaved.begin(2, 0).append(X, 2).end(10, OK);
    interleaved.begin(3, 20).readList(X, 1, 2, 3).end(30, OK);
    assertFound(Type.G0, strict(interleaved));
  }

  // ------------------------------------------------------------------ size

  /**
   * 100 000 sequential transfers over 1 000 accounts (accepted), then the same with one read made
   * stale somewhere in the middle (rejected). Prints the check time; asserts nothing about it.
   */
  @Test
  void hundredThousandTransactions(Random random) {
    int n = 100_000;
    int keys = 1_000;
    int stale = n / 4 + random.nextInt(n / 2);
    for (boolean inject : new boolean[] {false, true}) {
      Random r = new Random(random.nextLong());
      TxHistory h = new TxHistory();
      long[] version = new long[keys];
      long[] previous = new long[keys];
      long t = 0;
      for (int i = 0; i < n; i++) {
        int a = r.nextInt(keys);
        int b = (a + 1 + r.nextInt(keys - 1)) % keys;
        TxHistory.Tx tx = h.begin(i % 16, t);
        if (inject && i == stale) {
          // A read-only transaction that sees the version before last of a written account,
          // whose writer completed before it began: a stale read.
          while (version[a] == 0) {
            a = (a + 1) % keys;
          }
          tx.read(a, previous[a]).end(t + 1, OK);
          t += 2;
          continue;
        }
        tx.read(a, version[a]).read(b, version[b]);
        if (r.nextInt(4) > 0) {
          for (int k : new int[] {a, b}) {
            previous[k] = version[k];
            version[k] += 1;
            tx.write(k, version[k]);
          }
        }
        tx.end(t + 1, OK);
        t += 2;
      }
      long start = System.nanoTime();
      Result result = strict(h);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      System.out.println(
          String.format(
              Locale.ROOT,
              "checked %d transactions (%s) in %d ms: %s",
              n,
              inject ? "one stale read" : "clean",
              ms,
              result.valid() ? "valid" : result.types()));
      assertEquals(n, result.checked());
      if (!inject) {
        assertValid(result);
      } else {
        assertFound(Type.REALTIME, result);
      }
    }
  }

  /**
   * The worst case for the cycle search: 100 000 concurrent read-modify-writes of 100 keys that all
   * read the initial versions (lost updates everywhere: one huge component). Still polynomial and
   * quick; prints the time, asserts only what is found.
   */
  @Test
  void hundredThousandLostUpdates(Random random) {
    int n = 100_000;
    int keys = 100;
    TxHistory h = new TxHistory();
    long[] version = new long[keys];
    for (int i = 0; i < n; i++) {
      int a = random.nextInt(keys);
      version[a]++;
      h.begin(i % 16, i).read(a, 0).write(a, version[a]).end(n + i, OK);
    }
    long start = System.nanoTime();
    Result result = SerializabilityChecker.checkSerializable(h);
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    System.out.println(
        String.format(Locale.ROOT, "checked %d lost updates in %d ms: %s", n, ms, result.found()));
    assertEquals(Set.of(Type.G_SINGLE), result.types(), result::toString);
  }
}
