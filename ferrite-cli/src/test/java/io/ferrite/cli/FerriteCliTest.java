package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.fabric.FabricBench;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class FerriteCliTest extends CliCapture {
  @Test
  void benchFabricQuickLocalWritesEveryName(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("out/fabric.json");
    Path html = dir.resolve("out/fabric.html");
    int code =
        run(
            "bench",
            "fabric",
            "--quick",
            "--fabrics",
            "local",
            "--iterations",
            "50",
            "--duration",
            "20ms",
            "--region-mib",
            "4",
            "--dir",
            dir.toString(),
            "--json",
            json.toString(),
            "--html",
            html.toString(),
            "--quiet");
    assertEquals(0, code, err.toString());
    String text = Files.readString(json);
    String page = Files.readString(html);
    assertTrue(page.startsWith("<!DOCTYPE html>"), page);
    assertTrue(text.startsWith("{\n  \"suite\": \"fabric\",\n  \"results\": ["), text);
    for (String name : FabricBench.expectedNames(List.of("local"))) {
      assertTrue(text.contains("{\"name\": \"" + name + "\", "), name + " missing from JSON");
      assertTrue(out.toString().contains(name + " "), name + " missing from the table");
      assertTrue(page.contains(name), name + " missing from the page");
    }
    try (Stream<Path> left = Files.list(dir)) {
      assertEquals(List.of(json.getParent()), left.toList(), "only the outputs are left");
    }
  }

  @Test
  void helpTeachesWhatIsMeasuredTheCeilingsAndAnExample() {
    assertEquals(0, run("bench", "fabric", "--help"));
    String help = out.toString();
    assertTrue(help.contains("ceiling.memcpy"), help);
    assertTrue(help.contains("ceiling.socket.pingpong"), help);
    assertTrue(help.contains("ratio > 1"), help);
    assertTrue(help.contains("ferrite bench fabric --quick --fabrics local"), help);

    out.getBuffer().setLength(0);
    assertEquals(0, run("bench", "--help"));
    assertTrue(out.toString().contains("fabric"), out.toString());
    assertTrue(out.toString().contains("Example"), out.toString());

    out.getBuffer().setLength(0);
    assertEquals(0, run("--help"));
    assertTrue(out.toString().contains("bench"), out.toString());
  }

  @Test
  void versionIsTheProjectVersion() {
    assertEquals(0, run("--version"));
    assertTrue(out.toString().startsWith("ferrite "), out.toString());
    assertTrue(!out.toString().contains("${project.version}"), out.toString());
  }

  @Test
  void unknownFabricIsAUsageError() {
    assertEquals(2, run("bench", "fabric", "--fabrics", "carrier-pigeon"));
    assertTrue(err.toString().contains("unknown fabric carrier-pigeon"), err.toString());
  }

  @Test
  void aFailingRunSaysWhatFailedInOneLine(@TempDir Path dir) throws Exception {
    Path notADirectory = Files.writeString(dir.resolve("file"), "x");
    int code =
        run(
            "bench",
            "fabric",
            "--quick",
            "--fabrics",
            "local",
            "-q",
            "--dir",
            notADirectory.toString());
    assertEquals(1, code);
    assertTrue(err.toString().startsWith("error: "), err.toString());
    assertEquals(1, err.toString().lines().count(), err.toString());
  }

  @Test
  void aFerriteErrorIsShownWithoutTheWrappersAroundIt() {
    CommandLine cli = FerriteCli.commandLine();
    java.io.StringWriter w = new java.io.StringWriter();
    cli.setErr(new java.io.PrintWriter(w));
    Exception wrapped =
        new java.io.IOException(
            new java.util.concurrent.CompletionException(
                new FerriteException(ErrorCode.NOT_FOUND, "no kv table users")));
    assertEquals(1, FerriteCli.onFailure(wrapped, cli, null));
    assertEquals(
        "error: NOT_FOUND: no kv table users\n"
            + "  check the name: 'ferrite fs ls', 'ferrite kv tables', 'ferrite tree list'\n",
        w.toString().replace(System.lineSeparator(), "\n"));

    w.getBuffer().setLength(0);
    Exception io = new java.io.UncheckedIOException(new java.nio.file.NoSuchFileException("/x"));
    assertEquals(1, FerriteCli.onFailure(io, cli, null));
    assertEquals("error: NoSuchFileException: /x\n", w.toString());
  }

  @Test
  void durations() {
    DurationConverter c = new DurationConverter();
    assertEquals(Duration.ofMillis(500), c.convert("500ms"));
    assertEquals(Duration.ofSeconds(2), c.convert("2s"));
    assertEquals(Duration.ofMillis(1500), c.convert("1.5s"));
    assertEquals(Duration.ofMinutes(1), c.convert("1m"));
    assertEquals(Duration.ofSeconds(3), c.convert("PT3S"));
    assertEquals(2, run("bench", "fabric", "--duration", "soon"));
  }
}
