package io.ferrite.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.StringReader;
import java.util.List;
import java.util.Locale;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;

/**
 * The page is well-formed (parsed whole by the JDK's XML parser), names every result with its ratio
 * in the bars and the table, charts each percentile group, and links to nothing.
 */
class HtmlReportTest {
  private static BenchReport fabric() {
    BenchReport r = new BenchReport("fabric");
    BenchResult c50 = r.add(BenchResult.of("ceiling.memcpy.8B.p50", 40, "ns", Better.LOWER));
    BenchResult c99 = r.add(BenchResult.of("ceiling.memcpy.8B.p99", 90, "ns", Better.LOWER));
    BenchResult c999 = r.add(BenchResult.of("ceiling.memcpy.8B.p99.9", 400, "ns", Better.LOWER));
    r.add(BenchResult.against("shm.read.8B.p50", 160, "ns", Better.LOWER, c50));
    r.add(BenchResult.against("shm.read.8B.p99", 700, "ns", Better.LOWER, c99));
    r.add(BenchResult.against("shm.read.8B.p99.9", 25_000, "ns", Better.LOWER, c999));
    BenchResult bw =
        r.add(BenchResult.of("ceiling.memcpy.1MiB.bandwidth", 9000, "MiB/s", Better.HIGHER));
    r.add(BenchResult.against("tcp<&>\"'.read.1MiB.bandwidth", 3000, "MiB/s", Better.HIGHER, bw));
    return r;
  }

  private static BenchReport kv() {
    BenchReport r = new BenchReport("kv");
    BenchResult peer =
        r.add(BenchResult.of("redis.get.throughput", 100_000, "ops/s", Better.HIGHER));
    r.add(
        BenchResult.against("hopscotch.tcp.get.throughput", 150_000, "ops/s", Better.HIGHER, peer));
    r.add(BenchResult.of("hopscotch.tcp.get.p50", 9_000, "ns", Better.LOWER));
    r.add(BenchResult.of("hopscotch.tcp.get.p99", 60_000, "ns", Better.LOWER));
    return r;
  }

  private static Document parse(String page) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
    f.setAttribute(XMLConstants.ACCESS_EXTERNAL_DTD, "");
    f.setAttribute(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "");
    DocumentBuilder b = f.newDocumentBuilder();
    b.setErrorHandler(null); // a fatal error throws; no printing to stderr
    return b.parse(new InputSource(new StringReader(page)));
  }

  private static String text(Element e) {
    return e.getTextContent();
  }

  @Test
  void aWellFormedPageWithEveryResultAndRatio() throws Exception {
    List<BenchReport> reports = List.of(fabric(), kv());
    String page = HtmlReport.write("bench <pictures>", reports);
    Document doc = parse(page);
    assertEquals("html", doc.getDocumentElement().getTagName());

    NodeList svgs = doc.getElementsByTagName("svg");
    // The legend (2), per suite one bar chart, and one chart per percentile group with 2+ points:
    // ceiling.memcpy.8B, shm.read.8B, hopscotch.tcp.get.
    assertEquals(2 + 2 + 3, svgs.getLength(), "svg elements");
    StringBuilder svgText = new StringBuilder();
    for (int i = 0; i < svgs.getLength(); i++) {
      svgText.append(text((Element) svgs.item(i))).append('\n');
    }
    String tables = text((Element) doc.getElementsByTagName("body").item(0));
    for (BenchReport report : reports) {
      for (BenchResult r : report.results()) {
        assertTrue(tables.contains(r.name()), "the page names " + r.name());
        if (r.hasReference()) {
          String ratio = String.format(Locale.ROOT, "%.3f", r.ratio());
          assertTrue(
              svgText.toString().contains(r.name())
                  && svgText.toString().contains("ratio " + ratio),
              "the bars show " + r.name() + " and its ratio " + ratio);
        }
      }
    }
    assertTrue(page.contains("&lt;&amp;&gt;&quot;&#39;"), "names are escaped");
    assertFalse(page.toLowerCase(Locale.ROOT).contains("http://"), "no URL");
    assertFalse(page.toLowerCase(Locale.ROOT).contains("https://"), "no URL");
    assertFalse(page.contains("<script"), "no script");
  }

  @Test
  void thePercentileChartsCarryEveryPercentileAndItsReference() throws Exception {
    Document doc = parse(HtmlReport.write("t", List.of(fabric())));
    NodeList titles = doc.getElementsByTagName("title");
    StringBuilder all = new StringBuilder();
    for (int i = 0; i < titles.getLength(); i++) {
      all.append(titles.item(i).getTextContent()).append('\n');
    }
    for (String p : List.of("p50", "p99", "p99.9")) {
      assertTrue(all.toString().contains("shm.read.8B." + p + ": "), "a column for " + p);
      assertTrue(all.toString().contains("ceiling.memcpy.8B." + p + ": "), "its reference " + p);
    }
    assertTrue(all.toString().contains("shm.read.8B.p99.9: 25000 ns"), all.toString());
  }

  @Test
  void jsonReadsBackWhatItWrote() {
    for (BenchReport r : List.of(fabric(), kv())) {
      BenchReport back = JsonReport.read(r.toJson());
      assertEquals(r.suite(), back.suite());
      assertEquals(r.results(), back.results());
      assertEquals(r.toJson(), back.toJson());
    }
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> JsonReport.read("{\"suite\": 3}"));
    assertTrue(e.getMessage().contains("\"suite\""), e.getMessage());
  }
}
