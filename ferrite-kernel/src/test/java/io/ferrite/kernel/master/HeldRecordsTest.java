package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A call's answer is journaled in the same record as its first mutation ({@link HeldRecords}), so a
 * master that dies at any instant comes back either without the call or with its answer: never with
 * "applied, answer unknown" (issue #20: a retry then failed with INTERNAL "check its effect").
 */
@ExtendWith(SeedExtension.class)
class HeldRecordsTest {
  @TempDir Path dir;

  /** Allocate-and-free rounds per client in the crash test (about 3 records each). */
  private static final int CALLS_PER_CLIENT = 1500;

  /** A durability that records what is written to it and is durable when told. */
  private static final class Recording implements Durability {
    final List<List<MasterEvent>> records = new ArrayList<>();
    volatile long durable;
    final List<long[]> asked = new ArrayList<>();
    final List<CompletableFuture<Void>> waits = new ArrayList<>();

    void write(List<MasterEvent> events) {
      records.add(List.copyOf(events));
    }

    @Override
    public long writtenLsn() {
      return records.size();
    }

    @Override
    public long durableLsn() {
      return durable;
    }

    @Override
    public synchronized CompletableFuture<Void> whenDurable(long lsn) {
      assertTrue(lsn <= records.size(), "a wait past what was written: " + lsn);
      CompletableFuture<Void> f = new CompletableFuture<>();
      asked.add(new long[] {lsn});
      waits.add(f);
      return f;
    }

    @Override
    public FerriteException failure() {
      return null;
    }
  }

  private static MasterState state() {
    MasterState state =
        new MasterState(
            "c", MasterStateTest.BLOCK, 1000, 10_000, 100, new AtomicLong()::get, new Random(1));
    MasterStateTest.server(state, "s1", MasterStateTest.region(1, "dram", 16));
    return state;
  }

  @Test
  void theAnswerJoinsTheRecordOfTheFirstMutationAndLaterRecordsWaitBehindIt() {
    MasterState state = state();
    long session = state.openSession("c", 0).sessionId();
    Recording inner = new Recording();
    HeldRecords held = new HeldRecords(inner, inner::write);
    state.sink(held);

    RequestScope scope = new RequestScope(new MasterProtocol.RequestId(session, 7, 7));
    RequestScope.within(scope, () -> state.allocate(session, 2, "", false, ""));
    // The same call mutates again, nothing in between: the same record.
    RequestScope.within(scope, () -> state.allocate(session, 1, "", false, ""));
    assertEquals(1, held.writtenLsn());
    state.allocate(session, 1, "", false, ""); // another call's, without a request id
    assertEquals(0, inner.records.size(), "nothing written while the first record waits");
    assertEquals(2, held.writtenLsn(), "both numbered: an answer reflecting them waits for them");
    assertTrue(held.holding());
    CompletableFuture<Void> second = held.whenDurable(2);
    assertFalse(second.isDone());
    assertTrue(inner.asked.isEmpty(), "no wait on the inner journal past what it was given");

    state.answered(scope, 0, new byte[] {4, 2});
    assertFalse(held.holding());
    assertEquals(2, inner.records.size(), "both written, in order: " + inner.records);
    List<MasterEvent> first = inner.records.get(0);
    assertInstanceOf(MasterEvent.RequestApplied.class, first.get(0));
    assertInstanceOf(MasterEvent.BlocksAllocated.class, first.get(1));
    assertInstanceOf(MasterEvent.BlocksAllocated.class, first.get(2));
    assertEquals(4, first.size(), "mark, two mutations, answer: " + first);
    assertInstanceOf(MasterEvent.RequestAnswered.class, first.get(3));
    assertInstanceOf(MasterEvent.BlocksAllocated.class, inner.records.get(1).get(0));
    assertEquals(0, state.remembered(session, 7).status());
    assertEquals(1, inner.asked.size(), "the wait moved to the inner journal");
    assertEquals(2, inner.asked.get(0)[0]);
    assertFalse(second.isDone());
    inner.waits.get(0).complete(null);
    assertTrue(second.isDone());

    // Without anything held, records go straight through.
    state.allocate(session, 1, "", false, "");
    assertEquals(3, inner.records.size());
    assertEquals(3, held.writtenLsn());
  }

  @Test
  void aCallThatGoesAsynchronousWritesItsRecordAtOnceAndItsAnswerAfter() {
    MasterState state = state();
    long session = state.openSession("c", 0).sessionId();
    Recording inner = new Recording();
    state.sink(new HeldRecords(inner, inner::write));
    RequestScope scope = new RequestScope(new MasterProtocol.RequestId(session, 3, 3));
    RequestScope.within(scope, () -> state.allocate(session, 1, "", false, ""));
    assertEquals(0, inner.records.size());
    state.allocate(session, 1, "", false, ""); // another call's record comes between
    RequestScope.within(scope, () -> state.allocate(session, 1, "", false, ""));
    assertEquals(0, inner.records.size());
    state.unhold(scope); // what MasterService does when the handler's future is not done
    assertEquals(3, inner.records.size(), "in order, the call's second after the other's");
    state.unhold(scope);
    // A later mutation of the same call (another thread, after a lease revocation) is not held.
    RequestScope.within(scope, () -> state.allocate(session, 1, "", false, ""));
    assertEquals(4, inner.records.size());
    state.answered(scope, 0, new byte[] {1});
    assertEquals(5, inner.records.size());
    assertInstanceOf(MasterEvent.RequestAnswered.class, inner.records.get(4).get(0));
    // Releasing again (RequestIds' safety net) is harmless.
    scope.release();
    assertEquals(5, inner.records.size());
  }

  @Test
  void aHandlerThatAnswersWithoutTheServiceStillGetsItsRecordWritten() {
    MasterState state = state();
    long session = state.openSession("c", 0).sessionId();
    Recording inner = new Recording();
    state.sink(new HeldRecords(inner, inner::write));
    RequestScope scope = new RequestScope(new MasterProtocol.RequestId(session, 9, 9));
    RequestScope.within(scope, () -> state.allocate(session, 1, "", false, ""));
    assertEquals(0, inner.records.size());
    scope.release(); // RequestIds, once the handler returned
    assertEquals(1, inner.records.size());
    assertEquals(
        RememberedAnswers.UNKNOWN,
        state.remembered(session, 9).status(),
        "no answer was given: a retry is told so (as before)");
  }

  /**
   * The crash case end to end: clients allocate and free (every call with a request id) while the
   * master's journal directory is copied again and again, as a SIGKILL at that instant would leave
   * it; every copy, recovered, holds an answer for every applied call. Before the answer joined the
   * mutation's record, copies taken between the two records held applied calls without answers.
   */
  @Test
  void aJournalCutAtAnyInstantHoldsTheAnswerOfEveryAppliedCall(Random random) throws Exception {
    Map<String, String> settings =
        Map.of(
            FerriteConfig.SNAPSHOT_EVERY, "100000000",
            FerriteConfig.HEARTBEAT_INTERVAL, "20s",
            FerriteConfig.DEAD_TIMEOUT, "60s");
    try (LocalCluster cluster = new LocalCluster(dir.resolve("cluster"), settings)) {
      cluster.startMaster();
      cluster.startServer("s1");
      cluster.awaitServers(1);
      Path journal = cluster.dataDir.resolve("master").resolve("journal");
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      List<Thread> workers = new ArrayList<>();
      AtomicLong calls = new AtomicLong();
      for (int t = 0; t < 3; t++) {
        FerriteClient client = cluster.client();
        long seed = random.nextLong();
        Thread w =
            new Thread(
                () -> {
                  Random r = new Random(seed);
                  try {
                    // Bounded: every copy replays the whole log, which must stay small.
                    for (int i = 0; i < CALLS_PER_CLIENT && !stop.get(); i++) {
                      List<BlockRef> got = client.allocate(1 + r.nextInt(2));
                      client.free(got);
                      calls.addAndGet(2);
                    }
                  } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                  }
                },
                "held-records-client-" + t);
        w.start();
        workers.add(w);
      }
      int copies = 0;
      int cut = 0;
      List<String> lost = new ArrayList<>();
      try {
        while (copies < 150 && failed.get() == null && workers.stream().anyMatch(Thread::isAlive)) {
          Path copy = dir.resolve("copy-" + copies++);
          copyDirectory(journal, copy);
          lost.addAll(unansweredCalls(copy));
          deleteDirectory(copy);
          if (!lost.isEmpty()) {
            break;
          }
          cut++;
          Thread.sleep(random.nextInt(2));
        }
      } finally {
        stop.set(true);
        for (Thread w : workers) {
          w.join();
        }
      }
      if (failed.get() != null) {
        throw new AssertionError("a client failed", failed.get());
      }

      assertEquals(
          List.of(), lost, "applied calls without an answer, in copy " + cut + " of " + copies);
      assertTrue(
          copies >= 10, "only " + copies + " copies while the clients made " + calls + " calls");
    }
  }

  private static void copyDirectory(Path from, Path to) throws IOException {
    Files.createDirectories(to);
    try (Stream<Path> files = Files.list(from)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.copy(f, to.resolve(f.getFileName()));
      }
    }
  }

  private static void deleteDirectory(Path d) throws IOException {
    try (Stream<Path> files = Files.list(d)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.delete(f);
      }
    }
    Files.delete(d);
  }

  /** The calls a master recovered from {@code journal} would know as applied but not answered. */
  private static List<String> unansweredCalls(Path journal) {
    Set<String> applied = new HashSet<>();
    Set<String> answered = new HashSet<>();
    Set<Long> closed = new HashSet<>();
    try (Journal j =
        Journal.open(
            journal,
            false,
            e -> {
              if (e instanceof MasterEvent.RequestApplied a) {
                applied.add(Long.toHexString(a.sessionId()) + "/" + a.seq());
              } else if (e instanceof MasterEvent.RequestAnswered a) {
                answered.add(Long.toHexString(a.sessionId()) + "/" + a.seq());
              } else if (e instanceof MasterEvent.SessionClosed c) {
                closed.add(c.sessionId());
              }
            })) {
      assertTrue(j.recovery().logRecords() >= 0);
    }
    List<String> out = new ArrayList<>();
    for (String a : applied) {
      if (!answered.contains(a) && !closed.contains(Long.parseUnsignedLong(a.split("/")[0], 16))) {
        out.add(a);
      }
    }
    return out;
  }
}
