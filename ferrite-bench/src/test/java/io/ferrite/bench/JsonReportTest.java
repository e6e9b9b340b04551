package io.ferrite.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JsonReportTest {
  @Test
  void writesTheExactShape() {
    BenchReport report = new BenchReport("fabric");
    BenchResult ceiling =
        report.add(BenchResult.of("ceiling.memcpy.8B.p50", 40, "ns", Better.LOWER));
    report.add(BenchResult.against("shm.read.8B.p50", 160, "ns", Better.LOWER, ceiling));
    report.add(BenchResult.of("x.bandwidth", 1234.5, "MiB/s", Better.HIGHER));

    assertEquals(
        "{\n"
            + "  \"suite\": \"fabric\",\n"
            + "  \"results\": [\n"
            + "    {\"name\": \"ceiling.memcpy.8B.p50\", \"value\": 40.0, \"unit\": \"ns\","
            + " \"better\": \"lower\", \"reference\": null, \"reference_value\": null,"
            + " \"ratio\": null},\n"
            + "    {\"name\": \"shm.read.8B.p50\", \"value\": 160.0, \"unit\": \"ns\","
            + " \"better\": \"lower\", \"reference\": \"ceiling.memcpy.8B.p50\","
            + " \"reference_value\": 40.0, \"ratio\": 0.25},\n"
            + "    {\"name\": \"x.bandwidth\", \"value\": 1234.5, \"unit\": \"MiB/s\","
            + " \"better\": \"higher\", \"reference\": null, \"reference_value\": null,"
            + " \"ratio\": null}\n"
            + "  ]\n"
            + "}\n",
        report.toJson());
  }

  @Test
  void emptyReportIsValid() {
    assertEquals(
        "{\n  \"suite\": \"empty\",\n  \"results\": []\n}\n", new BenchReport("empty").toJson());
  }

  @Test
  void escapesStrings() {
    assertEquals("\"plain\"", JsonReport.quote("plain"));
    assertEquals("\"a\\\"b\"", JsonReport.quote("a\"b"));
    assertEquals("\"back\\\\slash\"", JsonReport.quote("back\\slash"));
    assertEquals("\"\\n\\r\\t\\b\\f\"", JsonReport.quote("\n\r\t\b\f"));
    assertEquals("\"\\u0000\\u001f\\u007f\"", JsonReport.quote("\u0000\u001f\u007f"));
    // Output is ASCII only: non-ASCII, including both halves of a surrogate pair, is escaped.
    assertEquals("\"\\u00b5s\"", JsonReport.quote("\u00b5s"));
    assertEquals("\"\\ud83d\\ude00\"", JsonReport.quote("\ud83d\ude00"));
    assertEquals("\"/\"", JsonReport.quote("/"));
  }

  @Test
  void escapesEveryField() {
    BenchReport report = new BenchReport("su\"ite");
    report.add(BenchResult.of("na\\me", 1, "u\nnit", Better.HIGHER));
    String json = report.toJson();
    assertTrue(json.contains("\"suite\": \"su\\\"ite\""), json);
    assertTrue(json.contains("\"name\": \"na\\\\me\""), json);
    assertTrue(json.contains("\"unit\": \"u\\nnit\""), json);
    for (char c : json.toCharArray()) {
      assertTrue(c == '\n' || (c >= 0x20 && c < 0x7f), "non-printable in output: " + (int) c);
    }
  }

  @Test
  void numbersAreValidJson() {
    assertEquals("null", JsonReport.number(Double.NaN));
    assertEquals("null", JsonReport.number(Double.POSITIVE_INFINITY));
    assertEquals("3.0", JsonReport.number(3));
    assertEquals("-2.0", JsonReport.number(-2));
    assertEquals("0.125", JsonReport.number(0.125));
    assertEquals("1.0E-5", JsonReport.number(1e-5));
    assertEquals("1.0E20", JsonReport.number(1e20));
    assertEquals("1.0E15", JsonReport.number(1e15));
    assertEquals("999999999999999.0", JsonReport.number(999_999_999_999_999d));
  }

  @Test
  void nanRatioIsNullButReferenceIsKept() {
    BenchReport report = new BenchReport("s");
    BenchResult zero = report.add(BenchResult.of("ref", 0, "ns", Better.LOWER));
    report.add(BenchResult.against("v", 5, "ns", Better.LOWER, zero));
    assertTrue(
        report
            .toJson()
            .contains("\"reference\": \"ref\", \"reference_value\": 0.0, \"ratio\": null"),
        report.toJson());
  }

  @Test
  void duplicateNamesAreRefused() {
    BenchReport report = new BenchReport("s");
    report.add(BenchResult.of("a", 1, "ns", Better.LOWER));
    assertThrows(
        IllegalArgumentException.class,
        () -> report.add(BenchResult.of("a", 2, "ns", Better.LOWER)));
  }

  @Test
  void writesUtf8FileCreatingDirectories(@TempDir Path dir) throws Exception {
    BenchReport report = new BenchReport("s");
    report.add(BenchResult.of("a", 1, "ns", Better.LOWER));
    Path file = dir.resolve("sub/dir/out.json");
    report.writeJson(file);
    assertEquals(report.toJson(), Files.readString(file, StandardCharsets.UTF_8));
  }

  @Test
  void tableAlignsColumns() {
    BenchReport report = new BenchReport("s");
    BenchResult c = report.add(BenchResult.of("ceiling.x.p50", 12345, "ns", Better.LOWER));
    report.add(BenchResult.against("f.x.p50", 2.5, "ns", Better.LOWER, c));
    String[] lines = report.table().split(System.lineSeparator());
    assertEquals("suite: s", lines[0]);
    int unitColumn = lines[1].indexOf("unit");
    assertEquals(unitColumn, lines[3].indexOf("ns"), report.table());
    assertEquals(unitColumn, lines[4].indexOf("ns"), report.table());
    assertTrue(lines[4].endsWith("4938.000"), report.table());
  }
}
