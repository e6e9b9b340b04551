package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The locality selector's rule, deterministic: a fake clock, latencies given as samples, seeded
 * exploration draws. Nothing here measures time.
 */
@ExtendWith(SeedExtension.class)
class PathSelectorTest {
  static final int S = 7;
  final AtomicLong clock = new AtomicLong(1_000_000_000L);

  PathSelector selector(double explore, Random random) {
    return selector(explore, false, random);
  }

  PathSelector selector(double explore, boolean queues, Random random) {
    return new PathSelector(
        new PathSelector.Settings(100, 3, explore, 1, 3_000_000_000L, queues, 1),
        clock::get,
        random::nextDouble);
  }

  /** {@code n} samples of each path around the given means (±5 %, seeded), 1 µs apart. */
  void feed(PathSelector s, Random r, Tree.Path path, double mean, long reads, int n) {
    for (int i = 0; i < n; i++) {
      clock.addAndGet(1000);
      long nanos = (long) (mean * (0.95 + 0.1 * r.nextDouble()));
      s.sample(S, path, nanos, reads);
    }
  }

  /** The path chosen now, not left in flight. */
  static Tree.Path decide(PathSelector s) {
    PathSelector.Choice c = s.choose(S);
    s.finished(S, c, 0, 0, false);
    return c.path();
  }

  @Test
  void eachPathIsTriedFirstThenTheCheaperOneIsTaken(Random random) {
    PathSelector s = selector(0, random);
    assertEquals(Tree.Path.SERVER, decide(s), "no estimate of the server path: it goes first");
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 1);
    assertEquals(Tree.Path.CLIENT, decide(s), "no estimate of the client path: it goes next");
    for (int i = 1; i < PathSelector.BURST; i++) {
      assertEquals(Tree.Path.CLIENT, decide(s), "the same thread's exploration goes on");
    }
    // Searches of 2 reads of 8 µs (16 µs) against one RPC of 10 µs: server-side.
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 50);
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 50);
    assertEquals(Tree.Path.SERVER, decide(s));
    double[] e = s.estimates(S);
    assertEquals(2, e[2], 1e-9, "m: reads per client-side search");
    // Searches of 1 read (the caches warmed up) of 8 µs: client-side now.
    feed(s, random, Tree.Path.CLIENT, 8_000, 1, 200);
    assertEquals(Tree.Path.CLIENT, decide(s), "m fell: " + s.estimates(S)[2]);
  }

  @Test
  void withQueuesTheSearchesInFlightTipTheChoice(Random random) {
    PathSelector latencies = selector(0, random);
    feed(latencies, random, Tree.Path.SERVER, 10_000, 1, 50);
    feed(latencies, random, Tree.Path.CLIENT, 16_000, 2, 50);
    for (int i = 0; i < 3; i++) {
      assertEquals(
          Tree.Path.SERVER, latencies.choose(S).path(), "latencies alone: in flight ignored");
    }
    PathSelector s = selector(0, true, random);
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 50);
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 50);
    // q_s·T_s < m·q_r·T_r with the search being decided counted: 1·10 < 1·16 µs.
    PathSelector.Choice first = s.choose(S);
    assertEquals(Tree.Path.SERVER, first.path());
    // One server-side search in flight: 2·10 > 1·16 µs, the next joins the client queue ...
    PathSelector.Choice second = s.choose(S);
    assertEquals(Tree.Path.CLIENT, second.path());
    // ... and with one in flight there, 2·10 < 2·16: server-side again.
    PathSelector.Choice third = s.choose(S);
    assertEquals(Tree.Path.SERVER, third.path());
    s.finished(S, first, 0, 0, false);
    s.finished(S, second, 0, 0, false);
    s.finished(S, third, 0, 0, false);
    assertEquals(0, s.estimates(S)[3], "nothing in flight");
    assertEquals(0, s.estimates(S)[4], "nothing in flight");
  }

  @Test
  void anOutlierIsDroppedButALoadShiftIsFollowedWithinTwoPeriods(Random random) {
    PathSelector s = selector(0, random);
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 100);
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 100);
    double before = s.estimates(S)[0];
    s.sample(S, Tree.Path.SERVER, 2_000_000, 1); // one 2 ms hiccup
    assertEquals(before, s.estimates(S)[0], 1e-9, "an outlier beyond 3σ is not averaged in");
    assertEquals(Tree.Path.SERVER, decide(s));
    // The server's service threads get busy (paper Figure 10): its searches take 200 µs. Each
    // sample is an outlier of the old window until one period dropped more than it kept; then the
    // window starts again from the new samples.
    int shifted = -1;
    for (int i = 0; i < 300; i++) {
      feed(s, random, Tree.Path.SERVER, 200_000, 1, 1);
      if (decide(s) == Tree.Path.CLIENT) {
        shifted = i;
        break;
      }
    }
    assertTrue(shifted >= 0 && shifted < 200, "followed the shift after " + shifted + " samples");
    assertTrue(shifted > 0, "a single slow sample does not flip the choice");
    // The load goes away: the server path's samples (exploration's, here fed) win it back.
    int back = -1;
    for (int i = 0; i < 300; i++) {
      feed(s, random, Tree.Path.SERVER, 10_000, 1, 1);
      if (decide(s) == Tree.Path.SERVER) {
        back = i;
        break;
      }
    }
    assertTrue(back >= 0 && back < 200, "followed back after " + back + " samples");
  }

  @Test
  void aServerNotSearchedForTheIdleTimeIsForgotten(Random random) {
    PathSelector s = selector(0, random);
    feed(s, random, Tree.Path.SERVER, 200_000, 1, 50);
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 50);
    assertEquals(Tree.Path.CLIENT, decide(s));
    clock.addAndGet(2_000_000_000L);
    assertEquals(Tree.Path.CLIENT, decide(s), "2 s: still remembered");
    clock.addAndGet(1_500_000_000L);
    assertEquals(Tree.Path.SERVER, decide(s), "3.5 s idle: history gone, the server tried again");
  }

  /** How often {@code s} takes the path it estimates worse, of {@code n} decisions. */
  static int explorations(PathSelector s, Tree.Path best, int n) {
    int worse = 0;
    for (int i = 0; i < n; i++) {
      if (decide(s) != best) {
        worse++;
      }
    }
    return worse;
  }

  static void assertBinomial(int seen, int n, double p, String what) {
    double sigma = Math.sqrt(n * p * (1 - p));
    assertTrue(
        Math.abs(seen - n * p) < 7 * sigma + 1,
        what + ": " + seen + " of " + n + " (expected about " + n * p + ")");
  }

  @Test
  void exploresAShareOfTheSearchesWhenFreeAndOfTheTimeWhenNot(Random random) {
    // Explorations that take no time: a share p of the searches, as Cell's.
    PathSelector s = selector(0.05, random);
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 100);
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 100);
    int n = 200_000;
    assertBinomial(explorations(s, Tree.Path.SERVER, n), n, 0.05, "free explorations");
    // The client path 100 times slower, each search advancing the clock by its cost: each
    // exploration bars the next for its time·(1/p − 1), so about p of the time goes to them
    // (p·X/(X + x): 4.95 %), not p of the searches (84 % of the time).
    PathSelector far = selector(0.05, random);
    for (int i = 0; i < 100; i++) {
      far.sample(S, Tree.Path.SERVER, 1_000, 1);
      far.sample(S, Tree.Path.CLIENT, 100_000, 1);
    }
    long exploring = 0;
    long total = 0;
    for (int i = 0; i < n; i++) {
      PathSelector.Choice c = far.choose(S);
      long cost = c.path() == Tree.Path.SERVER ? 1_000 : 100_000;
      clock.addAndGet(cost);
      far.finished(S, c, cost, 1, true);
      total += cost;
      exploring += c.explored() ? cost : 0;
      assertEquals(c.explored(), c.path() == Tree.Path.CLIENT, "only explorations go client-side");
    }
    double share = exploring / (double) total;
    assertTrue(share > 0.04 && share < 0.055, "time exploring: " + share);
    PathSelector none = selector(0, random);
    feed(none, random, Tree.Path.SERVER, 10_000, 1, 100);
    feed(none, random, Tree.Path.CLIENT, 16_000, 2, 100);
    assertEquals(0, explorations(none, Tree.Path.SERVER, 1000), "no exploration at p = 0");
  }

  @Test
  void badSettingsAreRefused() {
    assertThrows(
        IllegalArgumentException.class,
        () -> new PathSelector.Settings(1, 3, 0.01, 1, 1, false, 1),
        "samples");
    assertThrows(
        IllegalArgumentException.class,
        () -> new PathSelector.Settings(100, 1, 0.01, 1, 1, false, 1),
        "K");
    assertThrows(
        IllegalArgumentException.class,
        () -> new PathSelector.Settings(100, 3, 0.6, 1, 1, false, 1),
        "explore");
    assertThrows(
        IllegalArgumentException.class,
        () -> new PathSelector.Settings(100, 3, 0.01, 0, 1, false, 1),
        "factor");
    assertThrows(
        IllegalArgumentException.class,
        () -> new PathSelector.Settings(100, 3, 0.01, 1, 1, false, 0),
        "sampling");
  }

  /** A selector timing 1 in {@code sampling} searches while steady, drawing from {@code draws}. */
  PathSelector sampling(double explore, int sampling, DoubleSupplier draws) {
    return new PathSelector(
        new PathSelector.Settings(100, 3, explore, 1, 3_000_000_000L, false, sampling),
        clock::get,
        draws);
  }

  @Test
  void aSteadyPathIsTimedOneInNAWindowFillingOrShiftingEveryTime(Random random) {
    // The draws: seeded, or one fixed value while `fixed` is set.
    double[] fixed = {Double.NaN};
    DoubleSupplier draws = () -> Double.isNaN(fixed[0]) ? random.nextDouble() : fixed[0];
    PathSelector s = sampling(0, 16, draws);
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 50);
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 100);
    fixed[0] = 0.5;
    PathSelector.Choice c = s.choose(S);
    assertEquals(PathSelector.Choice.SERVER_TIMED, c, "the server window half full: timed");
    s.finished(S, c, 0, 0, false);
    // 70 more: full even if the σ of the first ten samples, small by chance, dropped one or two.
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 70);
    c = s.choose(S);
    assertEquals(PathSelector.Choice.SERVER, c, "full and steady: a draw of 0.5 is not timed");
    s.finished(S, c, 0, 0, false);
    fixed[0] = 0.05;
    assertEquals(PathSelector.Choice.SERVER_TIMED, s.choose(S), "a draw under 1/16 is timed");
    fixed[0] = Double.NaN;
    int n = 64_000;
    int timed = 0;
    for (int i = 0; i < n; i++) {
      c = s.choose(S);
      s.finished(S, c, 0, 0, false);
      timed += c.timed() ? 1 : 0;
      assertEquals(Tree.Path.SERVER, c.path());
    }
    assertBinomial(timed, n, 1.0 / 16, "timed while steady");
    // A sample at the window's middle first: the last seeded one may have been above every
    // sample the window holds (about 1 seed in 100), which begins a run on the high side, and the
    // two outliers below would then end a run of three (a level shift).
    clock.addAndGet(1000);
    s.sample(S, Tree.Path.SERVER, 10_000, 1);
    // A load shift: the server's searches take 14 µs (still below the client path's 16),
    // outliers of the window; two are dropped and leave it steady ...
    feed(s, random, Tree.Path.SERVER, 14_000, 1, 2);
    assertEquals(10_000, s.estimates(S)[0], 500, "two outliers dropped");
    fixed[0] = 0.5;
    c = s.choose(S);
    assertEquals(PathSelector.Choice.SERVER, c, "two outliers: still steady");
    s.finished(S, c, 0, 0, false);
    // ... the third on the same side is a level shift: the window restarts from the three, and
    // every search is timed again while it fills.
    feed(s, random, Tree.Path.SERVER, 14_000, 1, 1);
    assertEquals(14_000, s.estimates(S)[0], 800, "the window restarted from the run");
    assertEquals(PathSelector.Choice.SERVER_TIMED, s.choose(S), "a window filling: timed");
  }

  /** {@code s.choose(S)} from another thread (a failure there fails the test). */
  static PathSelector.Choice onOtherThread(PathSelector s) throws InterruptedException {
    AtomicReference<PathSelector.Choice> out = new AtomicReference<>();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread t =
        new Thread(
            () -> {
              try {
                PathSelector.Choice c = s.choose(S);
                s.finished(S, c, 0, 0, false);
                out.set(c);
              } catch (Throwable e) {
                failed.set(e);
              }
            },
            "path-selector-test-other");
    t.start();
    t.join();
    if (failed.get() != null) {
      throw new AssertionError("the other thread failed", failed.get());
    }
    return out.get();
  }

  @Test
  void anExplorationIsFourSearchesOfOneThreadTheFirstNotSampled() throws InterruptedException {
    // Draws of 0.99: no exploration by chance; only the client path's missing estimate starts one.
    PathSelector s = sampling(0.01, 16, () -> 0.99);
    s.sample(S, Tree.Path.SERVER, 10_000, 1);
    PathSelector.Choice c = s.choose(S);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c, "no client estimate: explored");
    assertEquals(PathSelector.Choice.SERVER_TIMED, onOtherThread(s), "one exploration at a time");
    // The thread's first client-side search pays its switch (300 µs): not sampled.
    clock.addAndGet(300_000);
    s.finished(S, c, 300_000, 2, true);
    assertEquals(0, s.estimates(S)[1], "the switch is no sample");
    for (int i = 1; i < PathSelector.BURST; i++) {
      assertEquals(
          Tree.Path.SERVER, onOtherThread(s).path(), "the exploring thread keeps the gate");
      c = s.choose(S);
      assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c, "the same thread goes on: " + i);
      clock.addAndGet(30_000);
      s.finished(S, c, 30_000, 2, true);
    }
    assertEquals(15_000, s.estimates(S)[1], 1e-9, "three warm samples of 2 reads of 15 µs");
    assertEquals(
        PathSelector.Choice.CLIENT_EXPLORED,
        s.choose(S),
        "3 samples, fewer than BOOTSTRAP: the client path explored again at once");
  }

  @Test
  void withBurstOneAnExplorationIsOneSampledSearch() {
    PathSelector s =
        new PathSelector(
            new PathSelector.Settings(100, 3, 0.01, 1, 3_000_000_000L, false, 16, 1),
            clock::get,
            () -> 0.99);
    s.sample(S, Tree.Path.SERVER, 10_000, 1);
    PathSelector.Choice c = s.choose(S);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c, "no client estimate: explored");
    clock.addAndGet(300_000);
    s.finished(S, c, 300_000, 2, true);
    assertEquals(150_000, s.estimates(S)[1], 1e-9, "its one search is its sample");
    // The exploration ended with its one search: the gate is not held for this thread, and the
    // client path (1 sample, fewer than BOOTSTRAP) is explored again at once by any thread.
    c = s.choose(S);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c, "1 sample: explored again at once");
  }

  @Test
  void anExplorationBarsTheNextUntilItsTimeIsPOfTheTimeSince() throws InterruptedException {
    // Every draw 0: each decision wants to explore; only the gate says no.
    PathSelector s = sampling(0.01, 16, () -> 0.0);
    for (int i = 0; i < 20; i++) {
      s.sample(S, Tree.Path.SERVER, 10_000, 1);
      s.sample(S, Tree.Path.CLIENT, 30_000, 2);
    }
    PathSelector.Choice first = s.choose(S);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, first);
    assertEquals(
        PathSelector.Choice.SERVER_TIMED, onOtherThread(s), "one exploration in flight at a time");
    // Its first search stalled for 10 ms, a one-off (descheduled, say): it counts for no more
    // than the path's estimate, 2 reads of 15 µs; the three others take 30 µs each. The next
    // exploration waits 4 · 30 µs · (1/0.01 − 1) = 11.88 ms.
    clock.addAndGet(10_000_000L);
    s.finished(S, first, 10_000_000L, 2, true);
    for (int i = 1; i < PathSelector.BURST; i++) {
      PathSelector.Choice c = s.choose(S);
      assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c);
      clock.addAndGet(30_000L);
      s.finished(S, c, 30_000L, 2, true);
    }
    clock.addAndGet(11_800_000L);
    assertEquals(Tree.Path.SERVER, onOtherThread(s).path(), "11.8 ms later: not yet");
    assertEquals(Tree.Path.SERVER, s.choose(S).path(), "nor for the thread that explored");
    clock.addAndGet(100_000L);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, s.choose(S), "11.9 ms later: explored");
  }

  @Test
  void anExplorationThatStalledBarsTheNextForItsQuickestSearchOnly() {
    double[] draw = {0.99};
    PathSelector s = sampling(0.01, 16, () -> draw[0]);
    for (int i = 0; i < 50; i++) {
      s.sample(S, Tree.Path.SERVER, 10_000, 1);
    }
    // The client path's first searches stalled (the machine, not the path): its estimate, the
    // lower median of ten samples, is 20 ms a search.
    s.sample(S, Tree.Path.CLIENT, 16_000, 2);
    for (int i = 1; i < PathSelector.BOOTSTRAP; i++) {
      s.sample(S, Tree.Path.CLIENT, 20_000_000, 2);
    }
    draw[0] = 0.0;
    long[] took = {20_000_000, 20_000_000, 16_000, 16_000};
    for (long nanos : took) {
      PathSelector.Choice c = s.choose(S);
      assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c);
      clock.addAndGet(nanos);
      s.finished(S, c, nanos, 2, true);
    }
    // 4 · 16 µs · (1/0.01 − 1) = 6.3 ms, not the four searches' 40 ms · 99 (capped at 3 s).
    clock.addAndGet(6_000_000L);
    assertEquals(Tree.Path.SERVER, s.choose(S).path(), "6 ms later: not yet");
    clock.addAndGet(400_000L);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, s.choose(S), "6.4 ms later: explored");
  }

  @Test
  void aThreadThatStopsMidExplorationHoldsTheGateForTenMillisecondsAtMost()
      throws InterruptedException {
    PathSelector s = sampling(0.01, 16, () -> 0.0);
    for (int i = 0; i < 20; i++) {
      s.sample(S, Tree.Path.SERVER, 10_000, 1);
      s.sample(S, Tree.Path.CLIENT, 30_000, 2);
    }
    PathSelector.Choice c = s.choose(S);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, c);
    clock.addAndGet(30_000L);
    s.finished(S, c, 30_000L, 2, true);
    // This thread searches no more; another may explore once the hold lapses.
    clock.addAndGet(PathSelector.BURST_HOLD_NANOS - 1_000);
    assertEquals(Tree.Path.SERVER, onOtherThread(s).path(), "held");
    clock.addAndGet(2_000);
    assertEquals(PathSelector.Choice.CLIENT_EXPLORED, onOtherThread(s), "the hold lapsed");
  }

  @Test
  void aColdStartDoesNotHoldTheEstimateWhileTheWindowFills(Random random) {
    PathSelector s = selector(0, random);
    // The first server-side search paid a cold start (10 ms); the next took 10 µs.
    s.sample(S, Tree.Path.SERVER, 10_000_000, 1);
    feed(s, random, Tree.Path.SERVER, 10_000, 1, 5);
    feed(s, random, Tree.Path.CLIENT, 16_000, 2, 50);
    assertEquals(Tree.Path.SERVER, decide(s), "10 µs against 32 µs: " + s.estimates(S)[0]);
    assertTrue(s.estimates(S)[0] < 11_000, "the median of a filling window: " + s.estimates(S)[0]);
    // Full (the cold start pushed out), the window's mean is the estimate again.
    feed(s, random, Tree.Path.SERVER, 20_000, 1, 100);
    assertEquals(20_000, s.estimates(S)[0], 1_000, "the mean of a full window");
  }

  @Test
  void aPathTakenThatAStallShiftedIsExploredBackAtOnce() {
    // Draws of 0.99: no exploration by chance.
    PathSelector s = sampling(0.01, 16, () -> 0.99);
    for (int i = 0; i < 100; i++) {
      s.sample(S, Tree.Path.SERVER, 10_000 + i % 3 * 100, 1);
      s.sample(S, Tree.Path.CLIENT, 16_000 + i % 3 * 100, 2);
    }
    assertEquals(PathSelector.Choice.SERVER, s.choose(S), "10 µs against 16");
    // The machine stalls: three server-side searches in a row take 5 ms, a level shift.
    for (int i = 0; i < PathSelector.SHIFT_RUN; i++) {
      s.sample(S, Tree.Path.SERVER, 5_000_000, 1);
    }
    assertEquals(5_000_000, s.estimates(S)[0], 1e-9, "the window restarted from the run");
    // The server path, its window refilling, is explored at once, not in 4 · 5 ms · 99.
    for (int i = 0; i < PathSelector.BURST; i++) {
      PathSelector.Choice c = s.choose(S);
      assertEquals(PathSelector.Choice.SERVER_EXPLORED, c, "explored at once: " + i);
      clock.addAndGet(10_000);
      s.finished(S, c, 10_000, 1, true);
    }
    assertEquals(
        PathSelector.Choice.SERVER_TIMED, s.choose(S), "three samples of 10 µs: back, timed");
  }

  @Test
  void aPathWithFewerThanThreeSamplesIsExploredAgainAtOnce() {
    // Draws of 0.99: no exploration by chance, and no exploration's time gates the next.
    PathSelector s = sampling(0.01, 16, () -> 0.99);
    for (int i = 0; i < 50; i++) {
      s.sample(S, Tree.Path.CLIENT, 16_000, 2);
    }
    // The first server-side search paid a cold start: 10 ms against 32 µs.
    s.sample(S, Tree.Path.SERVER, 10_000_000, 1);
    // An exploration of four searches, each failing (no sample): 1 sample still, so the next
    // exploration starts at once, not 4 · 5 ms · (1/0.01 − 1) later.
    for (int i = 0; i < PathSelector.BURST; i++) {
      PathSelector.Choice c = s.choose(S);
      assertEquals(PathSelector.Choice.SERVER_EXPLORED, c, "1 sample of the server: " + i);
      clock.addAndGet(5_000_000);
      s.finished(S, c, 5_000_000, 1, false);
    }
    PathSelector.Choice c = s.choose(S);
    assertEquals(PathSelector.Choice.SERVER_EXPLORED, c, "still 1 sample: explored at once");
    clock.addAndGet(5_000_000);
    s.finished(S, c, 5_000_000, 1, true); // its switch: not sampled
    for (int i = 1; i < PathSelector.BURST; i++) {
      c = s.choose(S);
      assertEquals(PathSelector.Choice.SERVER_EXPLORED, c);
      clock.addAndGet(10_000);
      s.finished(S, c, 10_000, 1, true);
    }
    assertEquals(
        PathSelector.Choice.SERVER_TIMED, s.choose(S), "the lower median of four: 10 µs, better");
  }

  /**
   * Scripted latencies of a get by each path (ns), given the searches on each path now and whether
   * this search switches its thread's path.
   */
  interface Latency {
    double of(Tree.Path path, int onServer, int onClient, boolean switched);
  }

  /**
   * Runs {@code threads} simulated threads for {@code nanos} of the fake clock, round robin on this
   * thread (each search takes its scripted latency ±5 %, seeded; the clock advances by it over
   * {@code threads}, as that many run at once) and returns {@code {searches, server-side ones,
   * summed latency (ns)}}. {@code last} holds each simulated thread's path, across calls.
   */
  long[] simulate(
      PathSelector s, Random r, Tree.Path[] last, Latency latency, long nanos, int threads) {
    long end = clock.get() + nanos;
    long searches = 0;
    long server = 0;
    long total = 0;
    while (clock.get() < end) {
      for (int t = 0; t < threads; t++) {
        PathSelector.Choice c = s.choose(S);
        int onServer = 0;
        for (int u = 0; u < threads; u++) {
          onServer += u != t && last[u] == Tree.Path.SERVER ? 1 : 0;
        }
        int onClient = threads - 1 - onServer + (c.path() == Tree.Path.CLIENT ? 1 : 0);
        onServer += c.path() == Tree.Path.SERVER ? 1 : 0;
        boolean switched = last[t] != null && last[t] != c.path();
        long nanosOf =
            (long)
                (latency.of(c.path(), onServer, onClient, switched)
                    * (0.95 + 0.1 * r.nextDouble()));
        last[t] = c.path();
        clock.addAndGet(Math.max(1, nanosOf / threads));
        s.finished(S, c, c.timed() ? nanosOf : 0, c.path() == Tree.Path.CLIENT ? 2 : 1, true);
        searches++;
        server += c.path() == Tree.Path.SERVER ? 1 : 0;
        total += nanosOf;
      }
    }
    return new long[] {searches, server, total};
  }

  @Test
  void oneThreadComesBackToAPathWhoseFirstSearchPaysTheSwitch(Random random) {
    // Over tcp at 1 thread (bench tree, measured): a server-side get takes 8 µs after a
    // server-side one and about 150 µs more after a client-side one; a client-side get (2 reads)
    // 20 µs, 30 µs more after a server-side one. The server is busy first (200 µs), then idle.
    PathSelector s =
        new PathSelector(PathSelector.Settings.defaults(), clock::get, random::nextDouble);
    boolean[] busy = {true};
    Latency tcp =
        (path, onServer, onClient, switched) ->
            path == Tree.Path.SERVER
                ? (busy[0] ? 200_000 : 8_000) + (switched ? 150_000 : 0)
                : 20_000 + (switched ? 30_000 : 0);
    Tree.Path[] last = new Tree.Path[1];
    long[] b = simulate(s, random, last, tcp, 200_000_000L, 1);
    assertTrue(b[1] < 0.1 * b[0], "busy: client-side, " + b[1] + " of " + b[0] + " server-side");
    busy[0] = false;
    simulate(s, random, last, tcp, 100_000_000L, 1);
    long[] idle = simulate(s, random, last, tcp, 200_000_000L, 1);
    // Against the server path alone (8 µs a get): at least 0.9 of its throughput.
    double ratio = 8_000.0 * idle[0] / idle[2];
    assertTrue(
        ratio >= 0.9,
        "idle again: "
            + ratio
            + " of the server path's throughput, "
            + idle[1]
            + " of "
            + idle[0]
            + " server-side");
  }

  @Test
  void sixteenThreadsFollowALoadShiftBothWays(Random random) {
    // 16 threads; each search's latency grows with the searches on its path (1 µs each). Idle:
    // server 10 µs, client 2 reads of 20 µs; busy: the server 200 µs. The herd moves to the client
    // path, and when the server is idle again it must come back: the server path's window then
    // holds busy samples, and its new ones come from explorations only.
    PathSelector s =
        new PathSelector(PathSelector.Settings.defaults(), clock::get, random::nextDouble);
    boolean[] busy = {false};
    Latency load =
        (path, onServer, onClient, switched) ->
            path == Tree.Path.SERVER
                ? (busy[0] ? 200_000 : 10_000) + 1_000 * onServer
                : 2 * (20_000 + 1_000 * onClient);
    Tree.Path[] last = new Tree.Path[16];
    int n = 16;
    simulate(s, random, last, load, 50_000_000L, n);
    long[] idle = simulate(s, random, last, load, 100_000_000L, n);
    assertTrue(idle[1] > 0.9 * idle[0], "idle: " + idle[1] + " of " + idle[0] + " server-side");
    busy[0] = true;
    simulate(s, random, last, load, 20_000_000L, n);
    long[] shifted = simulate(s, random, last, load, 100_000_000L, n);
    // Busy long enough for the server path's window to fill with explorations' samples (200 µs):
    // main's selector then dropped the idle server's samples (11 µs) as outliers until periods of
    // explorations had passed, and kept the 16 threads on the client path (0.36 of the server
    // path's throughput, 65 of 22 304 searches server-side in the last 100 ms).
    simulate(s, random, last, load, 3_000_000_000L, n);
    assertTrue(
        shifted[1] < 0.1 * shifted[0],
        "busy: " + shifted[1] + " of " + shifted[0] + " server-side");
    busy[0] = false;
    simulate(s, random, last, load, 20_000_000L, n);
    long[] again = simulate(s, random, last, load, 100_000_000L, n);
    // All 16 on the server path: 26 µs a search.
    double ratio = 26_000.0 * again[0] / again[2];
    assertTrue(
        ratio >= 0.95,
        "idle again: "
            + ratio
            + " of the server path's throughput, "
            + again[1]
            + " of "
            + again[0]
            + " server-side");
  }
}
