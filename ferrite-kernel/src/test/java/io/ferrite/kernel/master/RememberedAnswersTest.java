package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.MasterProtocol;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the master remembers for retries, and where the mark of an applied call goes: in the same
 * journal record (group) as the call's first mutation, so a crash can never keep one without the
 * other.
 */
@ExtendWith(SeedExtension.class)
class RememberedAnswersTest {
  @Test
  void answersBelowAckedBelowAreForgottenAndEverySessionIsBounded(Random random) {
    RememberedAnswers r = new RememberedAnswers();
    long s = random.nextLong();
    r.applied(s, 1, 1);
    r.answered(s, 1, 0, new byte[] {7});
    assertArrayEquals(new byte[] {7}, r.get(s, 1).body());
    r.applied(s, 3, 2); // the client no longer waits on 1
    assertNull(r.get(s, 1));
    assertEquals(RememberedAnswers.UNKNOWN, r.get(s, 3).status(), "applied, not yet answered");

    for (long seq = 4; seq < 4 + RememberedAnswers.PER_SESSION + 10; seq++) {
      r.applied(s, seq, 3); // a client that never acknowledges: the count bound holds
    }
    assertEquals(RememberedAnswers.PER_SESSION, r.size());
    assertNull(r.get(s, 3), "the oldest went first");

    long t = s + 1;
    int big = RememberedAnswers.MAX_ANSWER;
    for (long seq = 1; seq <= 12; seq++) {
      r.applied(t, seq, 1);
      r.answered(t, seq, 0, new byte[big]);
    }
    long kept = 0;
    for (long seq = 1; seq <= 12; seq++) {
      if (r.get(t, seq) != null) {
        kept += r.get(t, seq).body().length;
      }
    }
    assertTrue(kept <= RememberedAnswers.SESSION_BYTES, "bytes kept: " + kept);
    assertNotNull(r.get(t, 12), "the newest is kept");

    r.sessionClosed(s);
    r.sessionClosed(t);
    assertEquals(0, r.size());
  }

  @Test
  void theMarkOfAnAppliedCallIsInTheRecordOfItsMutation() {
    AtomicLong clock = new AtomicLong();
    MasterState state =
        new MasterState("c", MasterStateTest.BLOCK, 1000, 10_000, 100, clock::get, new Random(1));
    MasterStateTest.server(state, "s1", MasterStateTest.region(1, "dram", 8));
    long session = state.openSession("c", 0).sessionId();
    List<List<MasterEvent>> groups = new ArrayList<>();
    state.sink(groups::add);
    RequestScope scope = new RequestScope(new MasterProtocol.RequestId(session, 5, 5));
    RequestScope.within(scope, () -> state.allocate(session, 2, "", false, ""));
    assertEquals(1, groups.size(), "one record: " + groups);
    assertInstanceOf(MasterEvent.RequestApplied.class, groups.get(0).get(0));
    assertInstanceOf(MasterEvent.BlocksAllocated.class, groups.get(0).get(1));
    assertTrue(scope.applied());
    // A second mutation of the same call is not marked again; a call without a scope never.
    RequestScope.within(scope, () -> state.allocate(session, 1, "", false, ""));
    state.allocate(session, 1, "", false, "");
    assertEquals(1, groups.get(1).size());
    assertEquals(1, groups.get(2).size());
    state.answered(scope, 0, new byte[] {1, 2});
    assertArrayEquals(new byte[] {1, 2}, state.remembered(session, 5).body());
    assertEquals(1, state.rememberedAnswers());
  }
}
