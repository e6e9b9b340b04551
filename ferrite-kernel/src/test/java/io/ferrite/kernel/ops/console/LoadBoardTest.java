package io.ferrite.kernel.ops.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.OpKind;
import io.ferrite.kernel.proto.ServerLoad;
import io.ferrite.kernel.proto.Wire;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The rates the console charts, from heartbeat totals, on a clock the test moves. */
class LoadBoardTest {
  final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  final AtomicReference<ServerLoad> master = new AtomicReference<>(load(0, 0, 0));
  final AtomicReference<RpcLatency> masterLatency = new AtomicReference<>(RpcLatency.NONE);
  final LoadBoard board =
      new LoadBoard(master::get, masterLatency::get, nanos::get, () -> nanos.get() / 1_000_000);

  /** Totals with {@code reads} reads of 100 B and {@code rpcs} RPCs timed at 10 µs each. */
  static ServerLoad load(long reads, long rpcs, long p99) {
    long[] ops = new long[OpKind.values().length];
    long[] bytes = new long[ops.length];
    ops[OpKind.READ.ordinal()] = reads;
    bytes[OpKind.READ.ordinal()] = reads * 100;
    ops[OpKind.RPC.ordinal()] = rpcs;
    return new ServerLoad(ops, bytes, rpcs, rpcs * 10_000, rpcs > 0 ? 8_000 : -1, p99);
  }

  void tick(long millis) {
    nanos.addAndGet(millis * 1_000_000);
    board.sample();
  }

  @Test
  void ratesAreTotalsDifferencesPerSecondSummedOverServers() {
    board.report(1, load(100, 0, -1));
    board.report(2, load(0, 0, -1));
    tick(1000); // the baseline
    assertEquals(List.of(), board.samples());
    board.report(1, load(300, 10, 20_000));
    board.report(2, load(100, 30, 50_000));
    master.set(load(0, 7, -1));
    tick(2000);
    LoadBoard.Sample s = board.samples().get(0);
    assertEquals(150.0, s.opsPerSecond(OpKind.READ), 1e-9); // (200 + 100) / 2 s
    assertEquals(300 * 100, s.bytes()[OpKind.READ.ordinal()]);
    assertEquals(200 + 10, s.serverOps().get(1));
    assertEquals(100 + 30, s.serverOps().get(2));
    assertEquals(7, s.masterRpcs());
    assertEquals(10_000, s.servers().meanNanos());
    assertEquals(8_000, s.servers().p50Nanos());
    assertEquals(50_000, s.servers().p99Nanos()); // the largest of the servers' p99
    assertEquals(-1, s.master().meanNanos()); // the master has no timer here
  }

  @Test
  void aRestartedServerCountsFromZeroAndTheRingKeepsTwoMinutes() {
    board.report(1, load(1000, 0, -1));
    tick(1000);
    board.report(1, load(40, 0, -1)); // a new process: its totals start again
    tick(1000);
    assertEquals(40, board.samples().get(0).ops()[OpKind.READ.ordinal()]);
    for (int i = 0; i < LoadBoard.SAMPLES + 5; i++) {
      tick(1000);
    }
    assertEquals(LoadBoard.SAMPLES, board.samples().size());
    assertEquals(0, board.samples().get(LoadBoard.SAMPLES - 1).ops()[OpKind.READ.ordinal()]);
  }

  @Test
  void masterLatencyIsTheIntervalsMeanFromItsTimers() {
    tick(1000);
    masterLatency.set(new RpcLatency(4, 4_000_000, 900_000, 2_000_000));
    tick(1000);
    LoadBoard.Sample s = board.samples().get(0);
    assertEquals(1_000_000, s.master().meanNanos());
    assertEquals(2_000_000, s.master().p99Nanos());
    String json = board.json();
    assertTrue(json.contains("\"master\":{\"mean\":1000,\"p50\":900,\"p99\":2000}"), json);
  }

  @Test
  void rpcLatencyMergesTheTimersOfARegistry() {
    SimpleMeterRegistry r = new SimpleMeterRegistry();
    assertEquals(RpcLatency.NONE, RpcLatency.of(r));
    Timer a =
        Timer.builder(RpcLatency.TIMER)
            .tag("opcode", "a")
            .publishPercentiles(0.5, 0.99)
            .register(r);
    Timer b =
        Timer.builder(RpcLatency.TIMER)
            .tag("opcode", "b")
            .publishPercentiles(0.5, 0.99)
            .register(r);
    for (int i = 0; i < 100; i++) {
      a.record(Duration.ofNanos(1_000_000));
    }
    b.record(Duration.ofNanos(30_000_000));
    RpcLatency l = RpcLatency.of(r);
    assertEquals(101, l.count());
    assertEquals(130_000_000, l.totalNanos());
    // Percentiles come from a histogram (a few % off). One slow call in 101 is under 1%: the p99
    // is a's ~1 ms, not b's 30 ms (the largest p99 would make one rare opcode the server's).
    assertTrue(l.p99Nanos() > 900_000 && l.p99Nanos() < 1_100_000, "p99 by count: " + l);
    assertTrue(l.p50Nanos() > 900_000 && l.p50Nanos() < 1_100_000, "weighted p50: " + l);
    // Two slow calls in 102 are over 1%: the p99 is b's.
    b.record(Duration.ofNanos(30_000_000));
    l = RpcLatency.of(r);
    assertTrue(l.p99Nanos() >= 28_000_000, "p99 by count: " + l);
  }

  @Test
  void serverLoadCrossesTheWireAndSkipsKindsItDoesNotKnow() {
    ServerLoad l = load(12, 34, 56);
    Wire.Writer w = new Wire.Writer();
    l.write(w);
    assertEquals(l, ServerLoad.read(new Wire.Reader(w.toBuffer(), "load")));

    // A newer server with one more kind: this master reads what it knows and skips the rest.
    int kinds = OpKind.values().length;
    Wire.Writer newer = new Wire.Writer().u8(kinds + 1);
    for (int k = 0; k < kinds; k++) {
      newer.i64(l.ops()[k]).i64(l.bytes()[k]);
    }
    newer.i64(99).i64(99);
    newer.i64(l.rpcCount()).i64(l.rpcTotalNanos()).i64(l.rpcP50Nanos()).i64(l.rpcP99Nanos());
    Wire.Reader r = new Wire.Reader(newer.toBuffer(), "load");
    assertEquals(l, ServerLoad.read(r));
    r.end();
  }
}
