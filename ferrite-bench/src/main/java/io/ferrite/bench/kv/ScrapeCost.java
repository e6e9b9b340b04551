package io.ferrite.bench.kv;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.ops.OpsServer;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What a Prometheus scrape costs the data path (issue #17: a scrape every second must not lower
 * {@code bench kv} get throughput by more than 2%): the get-throughput case of {@link KvBench}
 * (hopscotch, 32 B values, zipfian keys) run {@link #ROUNDS} times without and with a thread that
 * GETs the master's and the server's {@code /metrics} every {@code every}, alternating so drift of
 * the machine lands on both. Reports {@code kv.scrape.<fabric>.get.32B.t<n>.scraped.throughput}
 * beside {@code ...unscraped.throughput} (ratio: scraped / unscraped, > 0.98 meets the goal).
 */
final class ScrapeCost {
  /** Alternations of without and with scraping. */
  static final int ROUNDS = 3;

  private static final int VALUE = 32;

  /** Scrapes of each target before the rounds. */
  private static final int WARMUP_SCRAPES = 200;

  private ScrapeCost() {}

  static void measure(BenchReport report, KvBench.Options o, Duration every, Progress progress)
      throws Exception {
    Path root = Files.createTempDirectory(o.directory(), "ferrite-bench-kv-scrape-");
    List<AutoCloseable> open = new ArrayList<>();
    try {
      InProcessCluster cluster = KvBench.startCluster(root, root.resolve("data"), true);
      open.add(cluster);
      String address = cluster.masterAddress();
      List<URI> targets = new ArrayList<>();
      List<OpsServer> endpoints = new ArrayList<>();
      endpoints.add(cluster.master().ops());
      for (MemoryServer s : cluster.servers()) {
        endpoints.add(s.ops());
      }
      for (OpsServer ops : endpoints) {
        if (ops == null) {
          throw new IllegalStateException("a process of the bench cluster serves no /metrics");
        }
        targets.add(ops.url().resolve("/metrics"));
      }
      progress.step("scraping " + targets + " every " + every.toMillis() + " ms, half the rounds");
      // Prometheus scrapes all day: measure the steady state, not the JIT compiling the scrape
      // path (registry, HTTP server and client) during the first scraped round.
      HttpClient warm = HttpClient.newHttpClient();
      for (int i = 0; i < WARMUP_SCRAPES; i++) {
        for (URI u : targets) {
          warm.send(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.ofByteArray());
        }
      }
      for (String fabric : o.fabrics()) {
        FerriteClient client = KvBench.connect(address, fabric);
        open.add(client);
        String table = "bench-scrape-" + fabric;
        KvTable t =
            new KvClient(client)
                .createTable(
                    table,
                    KvBench.tableOptions(TableOptions.Layout.HOPSCOTCH, o.keys(), VALUE, false));
        byte[] value = new byte[VALUE];
        for (int i = 0; i < o.keys(); i++) {
          t.put(KvBench.key(i), value);
        }
        byte[][] keys = new byte[o.keys()][];
        for (int i = 0; i < keys.length; i++) {
          keys[i] = KvBench.key(i);
        }
        Zipfian zipf = new Zipfian(o.keys());
        KvBench.Op get = r -> t.get(keys[zipf.next(r)]);
        for (int threads : o.threads()) {
          String base = "kv.scrape." + fabric + ".get." + Sizes.label(VALUE) + ".t" + threads;
          double without = 0;
          double with = 0;
          long scrapes = 0;
          long scrapeNanos = 0;
          long scrapeBytes = 0;
          for (int round = 0; round < ROUNDS; round++) {
            String at = base + " round " + (round + 1) + "/" + ROUNDS;
            double w = KvBench.drive(get, threads, o.duration()).throughput();
            without += w;
            Scraper s = new Scraper(targets, every);
            double sc;
            try {
              sc = KvBench.drive(get, threads, o.duration()).throughput();
            } finally {
              s.stop();
            }
            with += sc;
            scrapes += s.done();
            scrapeNanos += s.nanos();
            scrapeBytes += s.bytes();
            // Each round's pair, so that the noise of a shared machine shows beside the means.
            progress.step(
                String.format(
                    java.util.Locale.ROOT,
                    "%s: unscraped %.0f ops/s, scraped %.0f ops/s (%.3f)",
                    at,
                    w,
                    sc,
                    sc / w));
          }
          BenchResult peer =
              report.add(
                  BenchResult.of(
                      base + ".unscraped.throughput", without / ROUNDS, "ops/s", Better.HIGHER));
          report.add(
              BenchResult.against(
                  base + ".scraped.throughput", with / ROUNDS, "ops/s", Better.HIGHER, peer));
          progress.step(
              String.format(
                  java.util.Locale.ROOT,
                  "%s: %d scrapes during the scraped rounds, %.2f ms and %d B each on average",
                  base,
                  scrapes,
                  scrapes == 0 ? 0 : scrapeNanos / 1e6 / scrapes,
                  scrapes == 0 ? 0 : scrapeBytes / scrapes));
        }
      }
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        try {
          open.get(i).close();
        } catch (Exception e) {
          // Keep closing the rest.
        }
      }
      FileTrees.delete(root);
    }
  }

  /**
   * A thread that GETs every target's {@code /metrics} every {@code every} (the first at once, as
   * Prometheus does), reading the whole body; a failed scrape fails the measurement at {@link
   * #stop}.
   */
  private static final class Scraper {
    private final HttpClient http = HttpClient.newHttpClient();
    private final AtomicLong done = new AtomicLong();
    private final AtomicLong nanos = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Thread thread;
    private volatile boolean stop;

    Scraper(List<URI> targets, Duration every) {
      thread =
          new NamedThreadFactory("bench-kv-scraper", true)
              .newThread(
                  () -> {
                    try {
                      while (!stop) {
                        for (URI u : targets) {
                          long t0 = System.nanoTime();
                          HttpResponse<byte[]> r =
                              http.send(
                                  HttpRequest.newBuilder(u).build(),
                                  HttpResponse.BodyHandlers.ofByteArray());
                          if (r.statusCode() != 200) {
                            throw new IOException(u + ": HTTP " + r.statusCode());
                          }
                          nanos.addAndGet(System.nanoTime() - t0);
                          bytes.addAndGet(r.body().length);
                          done.incrementAndGet();
                        }
                        Thread.sleep(every.toMillis());
                      }
                    } catch (InterruptedException e) {
                      // Closed while sleeping.
                    } catch (Throwable e) {
                      failure.compareAndSet(null, e);
                    }
                  });
      thread.start();
    }

    long done() {
      return done.get();
    }

    /** Wall time of the scrapes (request to last byte) and bytes they read. */
    long nanos() {
      return nanos.get();
    }

    long bytes() {
      return bytes.get();
    }

    void stop() throws InterruptedException {
      stop = true;
      thread.interrupt();
      thread.join();
      if (failure.get() != null) {
        throw new IllegalStateException("a scrape failed", failure.get());
      }
    }
  }
}
