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
}
