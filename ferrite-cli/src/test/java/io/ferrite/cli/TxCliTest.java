package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.tx.TxConfig;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code ferrite tx bank} against a master and two memory servers (tcp + shm) in this JVM: the
 * accounts spread over both, so transfers commit on one server or by two-phase commit.
 */
class TxCliTest extends FaceCliCapture {
  TxCliTest() {
    super("txcli");
  }

  @Override
  Map<String, String> config() {
    return Map.of(
        TxConfig.REGION_SIZE, "4m", TxConfig.SLAB_SIZE, "64k", TxConfig.OBJECT_MAX, "1000");
  }

  @BeforeEach
  void secondServer() throws InterruptedException {
    cluster.startServer("s2");
    cluster.awaitServers(2);
  }

  @Test
  void bankRunsTransfersPrintsProgressAndPasses() {
    int code =
        run(
            "tx",
            "bank",
            "--accounts",
            "10",
            "--clients",
            "4",
            "--duration",
            "2s",
            "--seed",
            "7",
            "--balance",
            "50");
    assertEquals(0, code, out + "\n" + err);
    String text = out.toString();
    assertTrue(
        text.startsWith("creating 10 accounts of 50 on 2 server(s); 4 client(s) for 2 s, seed 7"),
        text);
    // A progress line a second (the last may come a hair before 2 s: at least one).
    Matcher m =
        Pattern.compile("(?m)^ +\\d+s  [0-9,]+ transfers/s  aborts [0-9.]+% \\(.*\\)$")
            .matcher(text);
    assertTrue(m.find(), text);
    Matcher total = Pattern.compile("(?m)^total: ([0-9,]+) transfers in [0-9.]+ s").matcher(text);
    assertTrue(total.find(), text);
    assertTrue(Long.parseLong(total.group(1).replace(",", "")) > 0, "transfers committed");
    assertTrue(
        text.contains("PASS: 10 balances sum to 500 (in one transaction; by lock-free reads)"),
        text);
  }

  @Test
  void badArgumentsAreNamedWithWhatIsExpected() {
    for (List<String> c :
        List.of(
            List.of("--accounts", "1", "--accounts: 1 (expected: >= 2"),
            List.of("--clients", "0", "--clients: 0 (expected: 1 to 1024)"),
            List.of("--duration", "0s", "--duration: 0ms (expected: > 0"),
            List.of("--duration", "soon", "duration: soon (expected"),
            List.of("--balance", "-1", "--balance: -1 (expected: >= 0)"))) {
      assertEquals(2, run("tx", "bank", c.get(0), c.get(1)), c.toString());
      assertTrue(err.toString().contains(c.get(2)), c + ": " + err);
      assertTrue(out.toString().isEmpty(), "nothing ran: " + out);
    }
  }

  /** {@code tx tao --load} writes the ids; {@code --run} in another call reads them and runs. */
  @Test
  void taoLoadsThenRunsFromTheIdsFile() throws Exception {
    String ids = dir.resolve("ids.txt").toString();
    int code =
        run("tx", "tao", "--load", "--objects", "60", "--assocs", "3", "--ids", ids, "--seed", "3");
    assertEquals(0, code, out + "\n" + err);
    assertTrue(out.toString().contains("ids of 60 objects in " + ids), out.toString());
    assertEquals(60, java.nio.file.Files.readAllLines(java.nio.file.Path.of(ids)).size());
    code = run("tx", "tao", "--run", "--clients", "2", "--duration", "1s", "--ids", ids);
    assertEquals(0, code, out + "\n" + err);
    Matcher m =
        Pattern.compile(
                "tao: (\\d+) ops in [0-9.]+ s \\(\\d+ ops/s\\), (\\d+) reads, (\\d+) writes")
            .matcher(out.toString());
    assertTrue(m.find(), out.toString());
    assertTrue(Long.parseLong(m.group(1)) > 0, "operations ran: " + out);
    assertTrue(out.toString().contains(", 0 errors,"), out.toString());
  }

  @Test
  void taoNamesBadArgumentsAndAMissingIdsFile() throws Exception {
    String missing = dir.resolve("none.txt").toString();
    for (List<String> c :
        List.of(
            List.of("--load", "--run", "--load and --run: give one"),
            List.of("--objects", "0", "--objects 0, --assocs 8 (expected: >= 1, >= 0)"),
            List.of("--clients", "0", "--clients: 0 (expected: 1 to 1024)"),
            List.of("--run", "--ids=" + missing, "--ids " + missing + ": no such file"))) {
      assertEquals(2, run("tx", "tao", c.get(0), c.get(1)), c.toString());
      assertTrue(err.toString().contains(c.get(2)), c + ": " + err);
    }
    java.nio.file.Path bad = dir.resolve("bad.txt");
    java.nio.file.Files.writeString(bad, "1:64:100:0\nnot-an-id\n");
    assertEquals(2, run("tx", "tao", "--run", "--ids", bad.toString()));
    assertTrue(err.toString().contains("line 2"), err.toString());
  }
}
