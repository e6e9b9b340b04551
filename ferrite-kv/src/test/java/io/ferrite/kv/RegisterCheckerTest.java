package io.ferrite.kv;

import static io.ferrite.kv.RegisterChecker.ABSENT;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kv.RegisterChecker.Op;
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
}
