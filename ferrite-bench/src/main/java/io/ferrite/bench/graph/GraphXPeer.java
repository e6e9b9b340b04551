package io.ferrite.bench.graph;

import io.ferrite.bench.PeerJars;
import io.ferrite.fabric.FerriteException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Starts Spark GraphX's PageRank (module {@code ferrite-graphx-peer}) as a child JVM and reads what
 * it measured. The peer has a class path of its own (Spark brings its own Netty and Scala, which
 * must not meet Ferrite's in one JVM): {@code ferrite-graphx-peer/target/lib/}, whose jar's
 * manifest names its dependencies beside it and the {@code --add-opens} Spark needs, so {@code java
 * -jar} is the whole launch.
 *
 * <p>Where the peer is: {@code $FERRITE_GRAPHX_PEER} (the jar) if set, else the checkout this code
 * runs from: {@code bin/ferrite} runs {@code <root>/ferrite-cli/target/lib/*.jar} and tests run
 * {@code <root>/ferrite-bench/target/classes}, so {@code <root>} is the nearest ancestor of this
 * class's jar or directory that holds {@code ferrite-graphx-peer/}.
 */
public final class GraphXPeer {
  /** Names the peer jar explicitly (a distribution laid out differently). */
  public static final String ENV = "FERRITE_GRAPHX_PEER";

  static final String MODULE = "ferrite-graphx-peer";

  private GraphXPeer() {}

  /**
   * What the peer measured.
   *
   * @param contextNanos starting the SparkContext
   * @param loadNanos {@code GraphLoader.edgeListFile}, cached and materialized
   * @param pageRankNanos {@code PageRank.run} to a materialized result
   */
  public record Result(
      int cores,
      int partitions,
      int iterations,
      long vertices,
      long edges,
      long contextNanos,
      long loadNanos,
      long pageRankNanos) {}

  /**
   * The peer's jar.
   *
   * @throws FerriteException NOT_FOUND saying how to build it when it is not there
   */
  public static Path find() {
    return PeerJars.find(MODULE, ENV, "the GraphX peer", GraphXPeer.class);
  }

  /**
   * Runs the peer on {@code edges} with {@code local[cores]} and waits for it (at most 30 minutes);
   * its output lines go to {@code sink} (may be null). {@code ranks}, if not null, receives {@code
   * "<id> <rank>"} lines.
   *
   * @throws IllegalStateException if the peer fails (its output is in {@code sink})
   */
  public static Result run(
      Path jar,
      Path edges,
      int iterations,
      int cores,
      int partitions,
      long heapBytes,
      Path ranks,
      PrintStream sink)
      throws IOException, InterruptedException {
    Path json = Files.createTempFile("ferrite-graphx", ".json");
    try {
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.add("-Xmx" + (heapBytes >> 20) + "m");
      cmd.add("-jar");
      cmd.add(jar.toString());
      cmd.addAll(
          List.of(
              "--edges",
              edges.toString(),
              "--iterations",
              Integer.toString(iterations),
              "--cores",
              Integer.toString(cores),
              "--partitions",
              Integer.toString(partitions),
              "--json",
              json.toString()));
      if (ranks != null) {
        cmd.add("--ranks");
        cmd.add(ranks.toString());
      }
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      // Spark binds to 127.0.0.1 anyway (the peer sets spark.driver.host); this only keeps it
      // from warning that the hostname resolves to a loopback address.
      pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
      Process p = pb.start();
      try {
        Thread pump = pump(p, sink);
        if (!p.waitFor(30, TimeUnit.MINUTES)) {
          throw new IllegalStateException("the GraphX peer did not finish in 30 minutes");
        }
        pump.join(TimeUnit.SECONDS.toMillis(5));
      } finally {
        p.destroyForcibly().waitFor();
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException(
            "the GraphX peer failed with status "
                + p.exitValue()
                + " (its output is above, lines 'graphx...')");
      }
      return parse(Files.readString(json, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(json);
    }
  }

  private static Thread pump(Process p, PrintStream sink) {
    Thread t =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                  if (sink != null) {
                    sink.println(line.startsWith("graphx") ? line : "graphx: " + line);
                  }
                }
              } catch (IOException e) {
                // The process is gone; its exit status says how.
              }
            },
            "graphx-peer-output");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** Reads the peer's one-line JSON (flat, numbers and one string: no JSON library needed). */
  static Result parse(String json) {
    return new Result(
        (int) number(json, "cores"),
        (int) number(json, "partitions"),
        (int) number(json, "iterations"),
        number(json, "vertices"),
        number(json, "edges"),
        number(json, "contextNanos"),
        number(json, "loadNanos"),
        number(json, "pageRankNanos"));
  }

  private static long number(String json, String key) {
    Matcher m = Pattern.compile("\"" + key + "\":(-?\\d+)").matcher(json);
    if (!m.find()) {
      throw new IllegalStateException("the GraphX peer's result has no " + key + ": " + json);
    }
    return Long.parseLong(m.group(1));
  }
}
