package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ferrite bench tx}: a brief real run (shm, replicas 1), and bad options. */
class TxBenchCliTest extends CliCapture {
  @Test
  void quickRunPrintsTheTableTheTargetsAndWritesJson(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("tx.json");
    int code =
        run(
            "bench",
            "tx",
            "--quick",
            "--fabrics",
            "shm",
            "--threads",
            "2",
            "--replicas",
            "1",
            "--duration",
            "30ms",
            "--accounts",
            "20",
            "--json",
            json.toString(),
            "--quiet");
    assertEquals(0, code, err.toString());
    String text = out.toString();
    for (String name :
        new String[] {
          "tx.shm.lockfree-read.8B.p50",
          "tx.shm.lockfree-read.8B.reads-per-read",
          "ceiling.tx.shm.r1.rpc-empty.p50",
          "tx.shm.r1.commit-1server.p50",
          "tx.shm.r1.commit-2server.round-trips",
          "tx.shm.r1.bank.t2.throughput",
          "tx.shm.r1.bank.t2.abort-rate"
        }) {
      assertTrue(text.contains(name + " "), name + " missing from the table:\n" + text);
    }
    assertTrue(text.contains("issue #13 targets:"), text);
    assertTrue(text.contains("lock-free read over shm: p50 <= 1 us, 1 one-sided read"), text);
    assertTrue(text.contains("not measured"), "tcp and redis were not run: " + text);
    String j = Files.readString(json);
    assertTrue(j.startsWith("{\n  \"suite\": \"tx\",\n  \"results\": ["), j);
  }

  @Test
  void badOptionsAreNamed() {
    assertEquals(2, run("bench", "tx", "--replicas", "3"));
    assertTrue(err.toString().contains("replicas: 3 (expected: 1 or 2"), err.toString());
    assertEquals(2, run("bench", "tx", "--vs", "memcached"));
    assertTrue(err.toString().contains("--vs: unknown peer memcached"), err.toString());
    assertEquals(2, run("bench", "tx", "--fabrics", "carrier-pigeon"));
    assertEquals(2, run("bench", "tx", "--accounts", "1"));
    assertTrue(err.toString().contains("accounts: 1 (expected: >= 2)"), err.toString());
  }
}
