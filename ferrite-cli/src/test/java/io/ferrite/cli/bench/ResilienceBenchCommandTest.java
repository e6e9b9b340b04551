package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.cli.CliCapture;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ferrite bench resilience}: help, bad input, and a small run (one SIGKILL of each kind, on
 * child JVMs) whose JSON has every row, and no acknowledged write lost.
 */
class ResilienceBenchCommandTest extends CliCapture {
  @TempDir Path dir;

  @Test
  void helpNamesTheFiguresAndTheirTargets() {
    assertEquals(0, run("bench", "resilience", "--help"));
    String help = out.toString();
    assertTrue(help.contains("resilience.server-kill"), help);
    assertTrue(help.contains("resilience.leader-kill"), help);
    assertTrue(help.contains("target <= 1000 ms"), help);
    assertTrue(help.contains("ferrite bench resilience --json resilience.json"), help);
    out.getBuffer().setLength(0);
    assertEquals(0, run("bench", "--help"));
    assertTrue(out.toString().contains("resilience"), out.toString());
  }

  @Test
  void badInputIsAUsageErrorThatSaysWhatWasExpected() {
    assertEquals(2, run("bench", "resilience", "--kills", "0"));
    assertTrue(err.toString().contains("kills: 0"), err.toString());
  }

  @Tag("multiprocess")
  @Test
  void aSmallRunKillsEachKindOnceAndLosesNothing() throws Exception {
    Path json = dir.resolve("resilience.json");
    assertEquals(
        0,
        run(
            "bench",
            "resilience",
            "--quick",
            "--quiet",
            "--fabrics",
            "tcp",
            "--kills",
            "1",
            "--file-size",
            "4MiB",
            "--duration",
            "200ms",
            "--dir",
            dir.toString(),
            "--json",
            json.toString()),
        err.toString());
    String j = Files.readString(json, StandardCharsets.UTF_8);
    assertTrue(j.contains("\"suite\": \"resilience\""), j);
    assertTrue(j.contains("\"kv.replicas.tcp.r2.put.t1.p50\""), j);
    assertTrue(j.contains("\"tcp.file.write.replicas.2.bandwidth\""), j);
    assertTrue(j.contains("\"reference\": \"resilience.server-kill.kill-to-dead.p50\""), j);
    assertTrue(j.contains("\"reference\": \"resilience.leader-kill.kill-to-leader.p50\""), j);
    Matcher lost =
        Pattern.compile(
                "\"name\": \"resilience.lost-acknowledged-writes\", \"value\": ([0-9.eE+-]+)")
            .matcher(j);
    assertTrue(lost.find(), j);
    assertEquals(0.0, Double.parseDouble(lost.group(1)), j);
  }
}
