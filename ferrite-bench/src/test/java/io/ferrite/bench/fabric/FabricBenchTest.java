package io.ferrite.bench.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the suite for real on the local fabric, briefly; asserts on shape, never on time. */
class FabricBenchTest {
  /** Every fabric this build knows (local; shm and tcp once their factory lines are in). */
  @Test
  void quickRunOfEveryFabricProducesEveryNameAndFreesEverything(@TempDir Path dir)
      throws Exception {
    FabricBench.Options options =
        FabricBench.Options.quick()
            .withFabrics(Fabrics.NAMES)
            .withIterations(50)
            .withDuration(Duration.ofMillis(20))
            .withRegionBytes(4L << 20)
            .withDirectory(dir)
            .withProgress(null);
    BenchReport report = FabricBench.run(options);

    List<String> names = report.results().stream().map(BenchResult::name).toList();
    assertEquals(FabricBench.expectedNames(Fabrics.NAMES), names);
    for (String expected :
        List.of(
            "local.read.8B.p50",
            "local.read.1KiB.p99",
            "local.read.64KiB.p99.9",
            "local.rpc.empty.p50",
            "local.read.1MiB.bandwidth",
            "local.write.1MiB.bandwidth",
            "ceiling.memcpy.8B.p50",
            "ceiling.socket.pingpong.8B.p50",
            "ceiling.socket.pingpong.poll.8B.p50",
            "ceiling.socket.pingpong.poll.8B.p99",
            "ceiling.socket.stream.1MiB.bandwidth")) {
      assertTrue(names.contains(expected), expected + " missing from " + names);
    }

    for (BenchResult r : report.results()) {
      assertTrue(r.value() > 0, r.name() + " = " + r.value());
      if (r.name().startsWith("ceiling.")) {
        assertTrue(!r.hasReference(), r.name() + " is a ceiling and has no reference");
      } else {
        BenchResult ref = report.get(r.reference());
        assertNotNull(ref, r.name() + " refers to missing " + r.reference());
        assertEquals(ref.value(), r.referenceValue(), r.name());
        assertEquals(BenchResult.ratio(r.better(), r.value(), ref.value()), r.ratio(), r.name());
      }
    }
    assertEquals(
        "ceiling.socket.rr.64B.batch16.t16.ops",
        report.require("tcp.read.64B.batch16.t16.ops").reference());
    // Same-host fabrics are compared with memcpy, RPCs with the raw ping-pong.
    assertEquals("ceiling.memcpy.64KiB.p99", report.require("local.read.64KiB.p99").reference());
    assertEquals(
        "ceiling.memcpy.1MiB.bandwidth", report.require("local.write.1MiB.bandwidth").reference());
    assertEquals(
        "ceiling.socket.pingpong.8B.p99.9", report.require("local.rpc.empty.p99.9").reference());
    // A network fabric's RPCs beside both 8 B ping-pongs: the blocking one, and the polling one.
    assertEquals("ceiling.socket.pingpong.8B.p50", report.require("tcp.rpc.empty.p50").reference());
    assertEquals(
        "ceiling.socket.pingpong.poll.8B.p50",
        report.require("tcp.rpc.empty.vs.poll.p50").reference());
    assertEquals(
        report.require("tcp.rpc.inline.p50").value(),
        report.require("tcp.rpc.inline.vs.poll.p50").value());
    assertEquals(
        "ceiling.socket.pingpong.poll.8B.p50",
        report.require("tcp.rpc.inline.vs.poll.p50").reference());
    assertTrue(names.stream().noneMatch(n -> n.startsWith("tcp-tls.") && n.contains(".vs.poll")));
    assertTrue(names.stream().noneMatch(n -> n.startsWith("local.") && n.contains(".vs.poll")));

    // tcp with TLS beside tcp without, measured in the same run: the ratio is TLS's cost.
    assertEquals(
        "tcp.read.1MiB.bandwidth", report.require("tcp-tls.read.1MiB.bandwidth").reference());
    assertEquals("tcp.rpc.empty.p50", report.require("tcp-tls.rpc.empty.p50").reference());
    assertEquals("tcp.read.8B.p99", report.require("tcp-tls.read.8B.p99").reference());
    assertEquals(
        "tcp.read.64B.batch16.t16.ops",
        report.require("tcp-tls.read.64B.batch16.t16.ops").reference());
    assertEquals("tcp.rpc.empty.t16.ops", report.require("tcp-tls.rpc.empty.t16.ops").reference());

    try (Stream<Path> left = Files.list(dir)) {
      assertEquals(List.of(), left.toList(), "region files and directories are deleted");
    }
  }

  @Test
  void tlsIsComparedWithTcpOnlyWhenTcpRanFirst() {
    assertEquals("tcp", FabricBench.peer("tcp-tls", List.of("shm", "tcp", "tcp-tls")));
    assertEquals(null, FabricBench.peer("tcp-tls", List.of("tcp-tls", "tcp")));
    assertEquals(null, FabricBench.peer("tcp-tls", List.of("tcp-tls")));
    assertEquals(null, FabricBench.peer("tcp", List.of("tcp", "tcp-tls")));
  }

  @Test
  void networkFabricsAreComparedWithTheRawSocket() {
    List<String> names = FabricBench.expectedNames(List.of("tcp", "shm"));
    assertTrue(names.contains("tcp.read.8B.p50"));
    assertTrue(names.contains("tcp.rpc.empty.p50"));
    assertTrue(names.contains("tcp.write.1MiB.bandwidth"));
    assertTrue(names.contains("shm.read.1MiB.bandwidth"));
    // Small-read throughput for the network fabric only, beside raw ops with the same threads.
    for (String ops :
        List.of(
            "tcp.read.8B.t1.ops",
            "tcp.read.64B.t16.ops",
            "tcp.read.64B.batch16.t1.ops",
            "tcp.read.64B.batch16.t16.ops",
            "tcp.rpc.empty.t16.ops",
            "ceiling.socket.rr.8B.t16.ops",
            "ceiling.socket.rr.64B.t16.ops",
            "ceiling.socket.rr.64B.batch16.t16.ops")) {
      assertTrue(names.contains(ops), ops + " missing from " + names);
    }
    assertTrue(names.stream().noneMatch(n -> n.startsWith("shm.") && n.endsWith(".ops")));
    assertTrue(
        FabricBench.expectedNames(List.of("shm", "local")).stream()
            .noneMatch(n -> n.endsWith(".ops")),
        "no socket ops ceilings without a network fabric");
    assertTrue(FabricBench.sameHost("shm"));
    assertTrue(FabricBench.sameHost("local"));
    assertTrue(!FabricBench.sameHost("tcp"));
  }
}
