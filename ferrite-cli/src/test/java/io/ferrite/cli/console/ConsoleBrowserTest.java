package io.ferrite.cli.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Sizes;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The master's web console in a real browser: Debian's {@code chromium} driven through {@code
 * chromedriver} by Selenium, against a live in-process cluster (master + two memory servers on tcp
 * and shm, metrics on port 0, a kv table read while the page runs). The page must show the numbers
 * {@code ferrite status} shows (servers, their state, capacity and use per class, the live totals),
 * the kv table among the faces' objects, and a rate chart of at least two samples with the reads in
 * it. Saves {@code target/console.png}.
 *
 * <p>Fails, never skips, when chromium is missing: CI's {@code .ci/run} installs it.
 */
@Tag("browser")
@ExtendWith(SeedExtension.class)
class ConsoleBrowserTest {
  @TempDir Path dir;
  ClusterHarness cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** {@code name} on the PATH (or in /usr/bin), or a failure saying what to install. */
  static Path executable(String name) {
    String path = System.getenv().getOrDefault("PATH", "") + ":/usr/bin";
    for (String d : path.split(":")) {
      if (d.isEmpty()) {
        continue;
      }
      Path p = Path.of(d, name);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return fail(
        name
            + " not found on the PATH: install chromium chromium-driver (apt-get install -y"
            + " chromium chromium-driver; .ci/run does it)");
  }

  static void await(String what, BooleanSupplier cond) throws InterruptedException {
    await(what, cond, () -> "");
  }

  static void await(String what, BooleanSupplier cond, Supplier<String> state)
      throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what + state.get());
      }
      Thread.sleep(100);
    }
  }

  @Test
  void pageShowsWhatStatusShowsAndChartsTheReads(Random random) throws Exception {
    Path chromium = executable("chromium");
    Path chromedriver = executable("chromedriver");
    String id = "console" + ProcessHandle.current().pid();
    cluster =
        new ClusterHarness(
            dir.resolve("data"),
            new Credentials(id, ("secret-of-" + id).getBytes(StandardCharsets.UTF_8)),
            true,
            Map.of(
                FerriteConfig.METRICS_PORT, "0",
                FerriteConfig.REGION_SIZE, "4m",
                FerriteConfig.BLOCK_SIZE, "256k",
                FerriteConfig.CAPACITY_DRAM, "32m",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.HEARTBEAT_INTERVAL, "200ms",
                FerriteConfig.DEAD_TIMEOUT, "5s"));
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
    FerriteClient client = cluster.client("tcp");
    KvTable users =
        new KvClient(client)
            .createTable(
                "users",
                TableOptions.DEFAULTS
                    .withShards(2)
                    .withSlotsPerShard(1024)
                    .withExtents(1 << 20, 4));
    int keys = 200;
    for (int i = 0; i < keys; i++) {
      users.put(
          ("user" + i).getBytes(StandardCharsets.UTF_8),
          ("v" + i).getBytes(StandardCharsets.UTF_8));
    }
    client.allocate(3); // blocks in use besides the table's service regions

    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(chromedriver.toFile())
            .usingAnyFreePort()
            .build();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium.toString());
    options.addArguments(
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1500");
    WebDriver driver = null;
    try {
      driver = new ChromeDriver(service, options);
      driver.get(cluster.master.ops().url().toString());
      WebDriver d = driver;
      // Reads go on while the page polls: the chart must get samples with reads in them.
      await(
          "the page to load and chart two samples with reads",
          () -> {
            for (int k = 0; k < 100; k++) {
              users.get(("user" + random.nextInt(keys)).getBytes(StandardCharsets.UTF_8));
            }
            WebElement chart = d.findElement(By.id("rates-chart"));
            return "true".equals(d.findElement(By.tagName("body")).getDomAttribute("data-loaded"))
                && Integer.parseInt(chart.getDomAttribute("data-samples")) >= 2
                && readRate(d.findElement(By.id("rates-now")).getText()) > 0;
          },
          () -> pageState(d));

      ClusterStatus status = stableStatus(client, d);
      checkPage(status, d);

      byte[] png = ((ChromeDriver) driver).getScreenshotAs(OutputType.BYTES);
      Path shot = Path.of("target", "console.png");
      Files.createDirectories(shot.getParent());
      Files.write(shot, png);
      assertTrue(png.length > 1000, "a screenshot");
    } finally {
      // quit() stops chromium; stop() the driver process, also when the session never started.
      if (driver != null) {
        driver.quit();
      }
      service.stop();
    }
  }

  /**
   * The page's text at some CSS selectors, read by one script: the page re-renders its tables at
   * each poll (every second) and a script runs between two renders, where reading element by
   * element (a WebDriver round trip each) can straddle one (StaleElementReferenceException, seen at
   * load 15). Per selector: the first match's text (null if none) and the number of matches.
   */
  record Page(Map<String, String> texts, Map<String, Integer> counts) {
    static Page read(WebDriver d, List<String> selectors) {
      Object got =
          ((JavascriptExecutor) d)
              .executeScript(
                  "return arguments[0].map(s => { const all = document.querySelectorAll(s);"
                      + " return [all.length ? all[0].innerText.trim() : null, all.length]; });",
                  selectors);
      Map<String, String> texts = new LinkedHashMap<>();
      Map<String, Integer> counts = new LinkedHashMap<>();
      List<?> rows = (List<?>) got;
      for (int i = 0; i < selectors.size(); i++) {
        List<?> r = (List<?>) rows.get(i);
        texts.put(selectors.get(i), (String) r.get(0));
        counts.put(selectors.get(i), ((Number) r.get(1)).intValue());
      }
      return new Page(texts, counts);
    }

    String text(String selector) {
      String t = texts.get(selector);
      assertTrue(t != null, "nothing on the page matches " + selector + ": " + texts);
      return t;
    }

    int count(String selector) {
      return counts.get(selector);
    }
  }

  /** Every figure the page shows equals {@code status}'s. */
  private static void checkPage(ClusterStatus status, WebDriver d) {
    Map<String, long[]> totals = status.totals(ServerState.ALIVE);
    List<String> selectors =
        new ArrayList<>(
            List.of(
                "#cluster-id",
                "#servers-alive",
                "#servers-dead",
                "#regions",
                "#block-size",
                "#capacity tbody tr",
                "#servers tbody tr",
                "#faces [data-face='kv']"));
    for (String cls : totals.keySet()) {
      selectors.add("#capacity tr[data-class='" + cls + "'] .used");
      selectors.add("#capacity tr[data-class='" + cls + "'] .capacity");
    }
    for (ClusterStatus.Member m : status.members()) {
      String row = "#servers tr[data-server='" + m.info().serverId() + "']";
      selectors.add(row + " .state");
      for (ClusterStatus.ClassUsage u : m.usage()) {
        String cell = row + " div.class[data-class='" + u.storageClass() + "']";
        selectors.add(cell);
        selectors.add(cell + " .split");
      }
    }
    Page p = Page.read(d, selectors);

    assertEquals(status.clusterId(), p.text("#cluster-id"));
    assertEquals(count(status, ServerState.ALIVE), p.text("#servers-alive"));
    assertEquals(count(status, ServerState.DEAD), p.text("#servers-dead"));
    assertEquals(String.valueOf(status.regions()), p.text("#regions"));
    assertEquals(Sizes.format(status.blockSize()), p.text("#block-size"));
    assertEquals(totals.size(), p.count("#capacity tbody tr"), "capacity rows");
    for (Map.Entry<String, long[]> e : totals.entrySet()) {
      String row = "#capacity tr[data-class='" + e.getKey() + "']";
      assertEquals(Sizes.format(e.getValue()[1]), p.text(row + " .used"));
      assertEquals(Sizes.format(e.getValue()[0]), p.text(row + " .capacity"));
    }
    assertTrue(totals.get("dram")[1] > 0, "something is used: " + status.format());
    assertEquals(status.members().size(), p.count("#servers tbody tr"));
    int kvSplits = 0;
    for (ClusterStatus.Member m : status.members()) {
      String row = "#servers tr[data-server='" + m.info().serverId() + "']";
      assertEquals(m.info().state().name(), p.text(row + " .state"));
      for (ClusterStatus.ClassUsage u : m.usage()) {
        String cell = row + " div.class[data-class='" + u.storageClass() + "']";
        assertTrue(
            p.text(cell)
                .contains(Sizes.format(u.usedBytes()) + " / " + Sizes.format(u.capacityBytes())),
            "server " + m.info().serverId() + " " + u + " shown as " + p.text(cell));
        // Where the use is, as `ferrite status` splits it: blocks, then each face's regions.
        StringBuilder split = new StringBuilder("blocks " + Sizes.format(u.blockBytes()));
        u.serviceBytes()
            .forEach((f, b) -> split.append(", ").append(f).append(' ').append(Sizes.format(b)));
        if (u.serviceBytes().isEmpty()) {
          assertEquals(
              0, p.count(cell + " .split"), "no split without service regions: " + p.text(cell));
        } else {
          kvSplits++;
          assertEquals(split.toString(), p.text(cell + " .split"));
        }
      }
    }
    assertTrue(kvSplits > 0, "the kv table's shards are service regions of some server");
    String faces = p.text("#faces [data-face='kv']");
    assertTrue(faces.contains("users"), "the kv table among the faces: " + faces);
  }

  /** What the page shows, for a failure's message. */
  static String pageState(WebDriver d) {
    try {
      return "; page: loaded="
          + d.findElement(By.tagName("body")).getDomAttribute("data-loaded")
          + ", samples="
          + d.findElement(By.id("rates-chart")).getDomAttribute("data-samples")
          + ", rates \""
          + text(d, "rates-now")
          + "\", connection \""
          + text(d, "conn")
          + "\", browser log "
          + d.manage().logs().get("browser").getAll();
    } catch (RuntimeException e) {
      return "; page unreadable: " + e;
    }
  }

  /** The read rate in the chart's "now: read 1.2 k, ..." caption. */
  static double readRate(String shown) {
    String caption = shown;
    int at = caption.indexOf("read ");
    if (at < 0) {
      return 0;
    }
    String[] v = caption.substring(at + 5).split("[ ,]");
    double x = Double.parseDouble(v[0]);
    String unit = v.length > 1 ? v[1] : "";
    return unit.equals("k") ? x * 1e3 : unit.equals("M") ? x * 1e6 : x;
  }

  static String text(WebDriver d, String id) {
    return d.findElement(By.id(id)).getText();
  }

  static String count(ClusterStatus s, ServerState state) {
    return String.valueOf(s.members().stream().filter(m -> m.info().state() == state).count());
  }

  /**
   * The status once the page shows a refresh made after it, and the cluster has not changed since:
   * the page polls every second, so it waits for one more refresh.
   */
  static ClusterStatus stableStatus(FerriteClient client, WebDriver d) throws InterruptedException {
    for (int attempt = 0; attempt < 20; attempt++) {
      ClusterStatus before = client.status();
      String updated = text(d, "conn");
      await("a refresh of the page", () -> !text(d, "conn").equals(updated));
      if (before.equals(client.status())) {
        return before;
      }
    }
    throw new AssertionError("the cluster kept changing");
  }
}
