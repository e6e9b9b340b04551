package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.cli.CliCapture;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The options several suites share ({@link BenchOptions}, {@link BenchOutput#vs}): each suite that
 * mixes one in reads what was given, else its own default, and refuses a bad value as a usage error
 * before anything runs.
 */
class BenchOptionsTest extends CliCapture {
  @Test
  void aSharedOptionReachesEachSuiteThatMixesItIn() {
    KvBenchCommand kv = new KvBenchCommand();
    new CommandLine(kv).parseArgs("--fabrics", "tcp", "--threads", "2,8");
    assertEquals(List.of("tcp"), kv.fabrics.given(kv.out));
    assertEquals(List.of(2, 8), kv.threads.given());
    TreeBenchCommand tree = new TreeBenchCommand();
    new CommandLine(tree).parseArgs();
    assertNull(tree.fabrics.given(tree.out));
    assertNull(tree.threads.given());

    MemoryBenchCommand memory = new MemoryBenchCommand();
    new CommandLine(memory).parseArgs("--servers", "3", "--depth", "8");
    assertEquals(3, memory.servers.or(2));
    assertEquals(8, memory.depth.or(4));
    RSortBenchCommand rsort = new RSortBenchCommand();
    new CommandLine(rsort).parseArgs();
    assertEquals(2, rsort.servers.or(2), "not given: the suite's default");
    FabricBenchCommand fabric = new FabricBenchCommand();
    new CommandLine(fabric).parseArgs();
    assertEquals(4, fabric.depth.or(4), "not given: the suite's default");
  }

  @Test
  void aBadSharedOptionIsAUsageErrorInEverySuite() {
    for (String suite : List.of("kv", "tree", "nodes")) {
      err.getBuffer().setLength(0);
      assertEquals(2, run("bench", suite, "--fabrics", "shm,rdma"), suite);
      assertTrue(
          err.toString().contains("--fabrics: unknown fabric rdma (expected one of: shm, tcp)"),
          suite + ": " + err);
    }
    for (String suite : List.of("kv", "tree")) {
      err.getBuffer().setLength(0);
      assertEquals(2, run("bench", suite, "--vs", "memcached"), suite);
      assertTrue(
          err.toString().contains("--vs: unknown peer memcached (expected: redis)"),
          suite + ": " + err);
    }
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "rsort", "--servers", "0"));
    assertTrue(err.toString().contains("servers: 0"), err.toString());
  }
}
