package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.cli.CliCapture;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ferrite bench html} from saved JSON ({@code --html} on a suite is checked with its {@code
 * --json} in {@code FerriteCliTest}, from the same run).
 */
class HtmlBenchCommandTest extends CliCapture {
  @Test
  void pagesFromSavedJson(@TempDir Path dir) throws Exception {
    BenchReport a = new BenchReport("fabric");
    BenchResult c = a.add(BenchResult.of("ceiling.memcpy.8B.p50", 40, "ns", Better.LOWER));
    a.add(BenchResult.against("shm.read.8B.p50", 160, "ns", Better.LOWER, c));
    BenchReport b = new BenchReport("kv");
    BenchResult p = b.add(BenchResult.of("redis.get.throughput", 1000, "ops/s", Better.HIGHER));
    b.add(BenchResult.against("kv.get.throughput", 1500, "ops/s", Better.HIGHER, p));
    a.writeJson(dir.resolve("a.json"));
    b.writeJson(dir.resolve("b.json"));
    Path page = dir.resolve("page.html");
    int code =
        run(
            "bench",
            "html",
            "--from",
            dir.resolve("a.json").toString(),
            dir.resolve("b.json").toString(),
            "--out",
            page.toString());
    assertEquals(0, code, err.toString());
    String html = Files.readString(page);
    assertTrue(html.contains("<title>ferrite bench fabric, kv</title>"), html);
    assertTrue(html.contains("ratio 0.250") && html.contains("ratio 1.500"), html);
    assertTrue(html.indexOf("suite: fabric") < html.indexOf("suite: kv"), "in --from order");
  }

  @Test
  void aFileThatIsNoReportIsAUsageError(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("x.json"), "{\"suite\": \"kv\", \"results\": [{}]}");
    assertEquals(
        2,
        run(
            "bench",
            "html",
            "--from",
            dir.resolve("x.json").toString(),
            "--out",
            dir.resolve("p.html").toString()));
    assertTrue(err.toString().contains("x.json: not a bench report"), err.toString());
    assertEquals(
        2,
        run(
            "bench",
            "html",
            "--from",
            dir.resolve("none.json").toString(),
            "--out",
            dir.resolve("p.html").toString()));
    assertTrue(err.toString().contains("none.json: cannot read it"), err.toString());
  }
}
