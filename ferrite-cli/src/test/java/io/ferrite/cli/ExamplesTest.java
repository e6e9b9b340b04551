package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FileTrees;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every documented example that needs only a local cluster runs on the cluster {@code ferrite
 * local} starts with its default options, and exits 0. The examples are read from README.md's code
 * blocks and every {@code --help} footer ({@link Examples}), so a new example is tested by default;
 * the ones that need something else are in {@link #SKIP}, each with its reason.
 *
 * <p>Everything runs as separate JVMs with {@code -Duser.home} set to a directory of the test: the
 * cluster's directory ({@code ~/.ferrite/local}) and the cluster file client commands find by
 * default ({@code ~/.ferrite/cluster}) are the test's, not a developer's, and the examples run with
 * no flags added. {@code ferrite local} is started with {@code --port 0} (not to collide with a
 * developer's cluster on 7100; clients learn the port from the cluster file) and {@code --set
 * shm.dir} (a private directory under /dev/shm, removed at the end) and nothing else: its sizing is
 * the machine's. The examples run in one JVM ({@link ExamplesRunner}, {@code FerriteCli}'s own
 * command line), except {@code ycsb}, whose YCSB Client exits its JVM: each of those is a {@code
 * ferrite} JVM of its own.
 */
@Tag("multiprocess")
class ExamplesTest {
  /**
   * Examples that need more than a local cluster, by prefix, and why. An example that ends in
   * {@code --help} is never skipped: it needs nothing.
   */
  static final Map<String, String> SKIP = new LinkedHashMap<>();

  static {
    SKIP.put(
        "ferrite local",
        "a second cluster, on the default port 7100 a developer's may hold; the test's cluster is"
            + " one, and CliTest and TlsCliTest run local with --exit-after-check and --tls");
    SKIP.put("ferrite <command>", "a placeholder, not a command");
    SKIP.put(
        "ferrite bench ",
        "benchmark suites start servers of their own and run for minutes: FerriteCliTest, the"
            + " *BenchCommandTest and ferrite-bench's tests run them small");
    SKIP.put("ferrite master ", "a master process of its own, on port 7100 or /var/lib/ferrite");
    SKIP.put("ferrite server ", "a memory server joining another host's master");
    SKIP.put("ferrite status --cluster ferrite://master.example.net", "another host");
    SKIP.put(
        "ferrite rsort --local ",
        "a second cluster in one JVM, sized for the sort (3.2 x 1 GiB for the first example);"
            + " RSortCommandTest runs --local");
    SKIP.put("ferrite rsort --input /data/gensort-out", "gensort output at /data/gensort-out");
    SKIP.put("ferrite ycsb b -p ferrite.cluster.file=/etc/ferrite/cluster", "another cluster");
  }

  /**
   * Commands run before an example that names one of these paths, so that it finds what it expects
   * whatever the examples before it did (rm, mv): a fresh /in with /in/data.bin and /in/a, an empty
   * /out, /shuffle/part-0. An example that puts a file itself ({@code fs put data.bin /in/}) gets
   * no /in/data.bin: it makes it.
   */
  static final List<List<String>> FS_FIXTURE =
      List.of(
          List.of("fs", "rm", "-r", "-f", "/in", "/out", "/shuffle"),
          List.of("fs", "mkdir", "-p", "/in", "/out", "/shuffle"),
          List.of("fs", "put", "data.bin", "/in/data.bin"),
          List.of("fs", "put", "data.bin", "/in/a"),
          List.of("fs", "put", "data.bin", "/shuffle/part-0"));

  static final long TIMEOUT_SECONDS = 240;

  @TempDir Path dir;

  @Test
  void everyExampleRunsOnTheDefaultLocalCluster() throws Exception {
    Path home = Files.createDirectories(dir.resolve("home"));
    Path work = Files.createDirectories(dir.resolve("work"));
    Path shm = Files.createTempDirectory(Path.of("/dev/shm"), "fex");
    List<Process> processes = new ArrayList<>();
    try {
      Process local =
          start(
              processes,
              home,
              work,
              "local",
              FerriteCli.class.getName(),
              "local",
              "--port",
              "0",
              "--set",
              "shm.dir=" + shm);
      awaitServing(local, dir.resolve("local.log"));
      fixtures(work);

      Path readme = Path.of("..", "README.md");
      Set<String> seen = new LinkedHashSet<>();
      List<Examples.Example> inJvm = new ArrayList<>();
      List<Examples.Example> ownJvm = new ArrayList<>();
      List<String> skipped = new ArrayList<>();
      for (Examples.Example e : Examples.all(readme)) {
        if (!seen.add(e.text())) {
          continue;
        }
        String why = skip(e.text());
        if (why != null) {
          skipped.add(e.text() + "  (" + why + ")");
        } else if (e.args().get(0).equals("ycsb") && !e.text().endsWith("--help")) {
          ownJvm.add(e);
        } else {
          inJvm.add(e);
        }
      }
      assertTrue(inJvm.size() > 25, "examples found: " + inJvm);

      List<String> failures = new ArrayList<>();
      List<String> lines = new ArrayList<>();
      List<Examples.Example> byLine = new ArrayList<>();
      for (Examples.Example e : inJvm) {
        List<String> args = expandHome(e.args(), home);
        if (String.join(" ", args).matches(".* /(in|out|shuffle)\\b.*")) {
          for (List<String> f : FS_FIXTURE) {
            if (args.get(1).equals("put") && f.contains("/in/data.bin")) {
              continue;
            }
            lines.add("setup\t" + String.join("\t", f));
            byLine.add(null);
          }
        }
        if (e.text().equals("ferrite kv get --hex users 00ff10")) {
          lines.add("setup\tkv\tput\t--hex\tusers\t00ff10\t00");
          byLine.add(null);
        }
        lines.add("example\t" + String.join("\t", args));
        byLine.add(e);
      }
      Path input = Files.write(dir.resolve("examples.txt"), lines, StandardCharsets.UTF_8);
      Path results = dir.resolve("results.txt");
      Process runner =
          start(
              processes,
              home,
              work,
              "examples",
              ExamplesRunner.class.getName(),
              input.toString(),
              results.toString());
      finish(runner, "the examples runner");
      List<String> got = Files.readAllLines(results, StandardCharsets.UTF_8);
      List<String> times = new ArrayList<>();
      for (String r : got) {
        String[] f = r.split("\t", 4);
        int line = Integer.parseInt(f[0]);
        String what =
            byLine.get(line) == null ? "setup " + lines.get(line) : byLine.get(line).toString();
        if (!f[1].equals("0")) {
          failures.add(what + "\n    exit " + f[1] + ": " + (f.length > 3 ? f[3] : ""));
        }
        times.add(String.format(java.util.Locale.ROOT, "%7d ms  %s", Long.parseLong(f[2]), what));
      }
      if (got.size() != lines.size()) {
        failures.add("the runner stopped after " + got.size() + " of " + lines.size());
      }

      for (Examples.Example e : ownJvm) {
        List<String> args = expandHome(e.args(), home);
        String name = "ycsb-" + processes.size();
        Process p =
            start(
                processes,
                home,
                work,
                name,
                FerriteCli.class.getName(),
                args.toArray(new String[0]));
        long t0 = System.nanoTime();
        int rc = finish(p, e.toString());
        times.add(
            String.format(
                java.util.Locale.ROOT,
                "%7d ms  %s (own JVM)",
                (System.nanoTime() - t0) / 1_000_000,
                e));
        if (rc != 0) {
          failures.add(e + "\n    exit " + rc + ": " + tail(dir.resolve(name + ".log")));
        }
      }
      // Where the time goes, for whoever finds this test slow (the report, not an assertion).
      times.sort(Comparator.reverseOrder());
      System.out.println(
          "slowest examples:\n" + String.join("\n", times.subList(0, Math.min(8, times.size()))));
      assertTrue(
          failures.isEmpty(),
          failures.size()
              + " example(s) failed:\n"
              + String.join("\n", failures)
              + "\nskipped:\n  "
              + String.join("\n  ", skipped)
              + "\ncluster log:\n"
              + tail(dir.resolve("local.log")));
    } finally {
      for (Process p : processes) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
      for (Process p : processes) {
        p.waitFor();
      }
      FileTrees.delete(shm);
    }
  }

  /** The reason {@code text} is skipped, or null if it runs. */
  static String skip(String text) {
    if (text.endsWith("--help")) {
      return null;
    }
    for (Map.Entry<String, String> e : SKIP.entrySet()) {
      if (text.startsWith(e.getKey())) {
        return e.getValue();
      }
    }
    return null;
  }

  /** The local files the examples name, in the examples' working directory. */
  private static void fixtures(Path work) throws IOException {
    Random r = new Random(17);
    byte[] big = new byte[6 << 20];
    r.nextBytes(big);
    Files.write(work.resolve("big.bin"), big);
    byte[] data = new byte[64 << 10];
    r.nextBytes(data);
    Files.write(work.resolve("data.bin"), data);
    Files.writeString(work.resolve("value.json"), "{\"v\": 1}\n");
    Files.writeString(work.resolve("v.json"), "{\"v\": 2}\n");
    StringBuilder tsv = new StringBuilder();
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < 2000; i++) {
      tsv.append("user").append(i).append('\t').append("{\"n\": ").append(i).append("}\n");
      hex.append(String.format(java.util.Locale.ROOT, "%08x\t%016x%n", i, r.nextLong()));
    }
    Files.writeString(work.resolve("users.tsv"), tsv);
    Files.writeString(work.resolve("blobs.hex"), hex);
    Files.writeString(
        work.resolve("myworkload"),
        "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=1000\noperationcount=1000\n"
            + "readproportion=0.5\nupdateproportion=0.5\ntable=mytable\n");
  }

  /** A shell expands {@code ~/}; so does the test, to the private home. */
  private static List<String> expandHome(List<String> args, Path home) {
    List<String> out = new ArrayList<>();
    for (String a : args) {
      out.add(a.startsWith("~/") ? home.resolve(a.substring(2)).toString() : a);
    }
    return out;
  }

  private Process start(
      List<Process> processes, Path home, Path work, String name, String main, String... args)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Duser.home=" + home);
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main);
    cmd.addAll(List.of(args));
    Process p =
        new ProcessBuilder(cmd)
            .directory(work.toFile())
            // No example reads stdin: one that did would see its end, not hang.
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(name + ".log").toFile())
            .start();
    processes.add(p);
    return p;
  }

  /** Waits for {@code p} to exit, for at most TIMEOUT_SECONDS, and returns its exit status. */
  private int finish(Process p, String what) throws InterruptedException {
    if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
      throw new AssertionError(what + " did not finish in " + TIMEOUT_SECONDS + " s");
    }
    return p.exitValue();
  }

  private static void awaitServing(Process local, Path log) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < deadline) {
      String text = Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
      if (text.contains("serving until Ctrl-C")) {
        assertTrue(text.contains("self-check passed"), text);
        return;
      }
      if (!local.isAlive()) {
        throw new AssertionError("ferrite local exited " + local.exitValue() + ":\n" + text);
      }
      Thread.sleep(100);
    }
    throw new AssertionError("ferrite local did not start:\n" + tail(log));
  }

  private static String tail(Path log) {
    try {
      List<String> l = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", l.subList(Math.max(0, l.size() - 40), l.size()));
    } catch (IOException e) {
      return e.toString();
    }
  }
}
