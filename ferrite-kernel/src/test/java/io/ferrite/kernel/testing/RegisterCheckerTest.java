package io.ferrite.kernel.testing;

import static io.ferrite.kernel.testing.RegisterChecker.ABSENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.testing.RegisterChecker.Op;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The checker itself: it must reject what is not linearizable, or the kv test proves nothing. */
class RegisterCheckerTest {
  @Test
  void sequentialHistories() {
    assertTrue(
        RegisterChecker.check(
            List.of(new Op(0, 0, 1, true, 5), new Op(1, 2, 3, false, 5)), ABSENT));
    assertFalse(
        RegisterChecker.check(
            List.of(new Op(0, 0, 1, true, 5), new Op(1, 2, 3, false, ABSENT)), ABSENT),
        "a read after a completed write must see it");
    assertFalse(
        RegisterChecker.check(List.of(new Op(0, 0, 1, false, 7)), ABSENT), "a value nobody wrote");
  }

  @Test
  void overlappingOperationsMayOrderEitherWay() {
    assertTrue(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 10, true, 1),
                new Op(1, 1, 2, false, ABSENT),
                new Op(2, 3, 4, false, 1)),
            ABSENT));
    // Once a read saw the new value, a later read must not see the old one.
    assertFalse(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 10, true, 1),
                new Op(1, 1, 2, false, 1),
                new Op(2, 3, 4, false, ABSENT)),
            ABSENT));
  }

  @Test
  void deletesAreWritesOfAbsent() {
    assertTrue(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 1, true, 1),
                new Op(1, 2, 3, true, ABSENT),
                new Op(2, 4, 5, false, ABSENT)),
            ABSENT));
    assertFalse(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 1, true, 1), new Op(1, 2, 3, true, ABSENT), new Op(2, 4, 5, false, 1)),
            ABSENT));
  }

  @Test
  void aWriteOfUnknownOutcomeMayHaveHappenedOrNot() {
    long unknown = Long.MAX_VALUE; // its caller saw a failure: no response
    // Never observed: it linearizes last, after everything.
    assertTrue(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 1, true, 1),
                new Op(1, 2, unknown, true, 2),
                new Op(2, 5, 6, false, 1)),
            ABSENT));
    // Observed long after its caller gave up: it happened.
    assertTrue(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 1, true, 1),
                new Op(1, 2, unknown, true, 2),
                new Op(2, 50, 51, false, 2),
                new Op(3, 60, 61, false, 2)),
            ABSENT));
    // But not before it was called, and once seen it cannot be unseen.
    assertFalse(
        RegisterChecker.check(
            List.of(new Op(0, 0, 1, false, 2), new Op(1, 2, unknown, true, 2)), ABSENT));
    assertFalse(
        RegisterChecker.check(
            List.of(
                new Op(0, 0, 1, true, 1),
                new Op(1, 2, unknown, true, 2),
                new Op(2, 50, 51, false, 2),
                new Op(3, 60, 61, false, 1)),
            ABSENT));
  }

  @Test
  void pruningDropsOnlyUnknownWritesNoReadSaw() {
    long unknown = Long.MAX_VALUE;
    List<Op> h =
        List.of(
            new Op(0, 0, 1, true, 1),
            new Op(1, 2, unknown, true, 2), // never seen: dropped
            new Op(2, 3, unknown, true, 3), // seen below: kept
            new Op(3, 5, 6, false, 3),
            new Op(4, 7, 8, true, 4)); // acknowledged: kept
    List<Op> p = RegisterChecker.pruned(h);
    assertEquals(
        List.of(
            new Op(0, 0, 1, true, 1),
            new Op(1, 3, unknown, true, 3),
            new Op(2, 5, 6, false, 3),
            new Op(3, 7, 8, true, 4)),
        p);
    assertTrue(RegisterChecker.check(p, ABSENT));
    // A non-linearizable history stays so: the stale read is not excused by pruning.
    List<Op> bad =
        List.of(
            new Op(0, 0, 1, true, 1),
            new Op(1, 2, 3, true, 2),
            new Op(2, 4, unknown, true, 5),
            new Op(3, 6, 7, false, 1));
    assertFalse(RegisterChecker.check(RegisterChecker.pruned(bad), ABSENT));
  }
}
