package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A Spark driver SIGKILLed with its shuffle registered (issue #16, "Faults"): its application
 * Directory is ephemeral (docs/NODES.md, "Ephemeral directories"), so once the driver's session
 * lease runs out (10 s in {@link SparkTestCluster}) the master removes it with every map output in
 * it and frees their memory; the shared root {@code /spark} stays. The driver is a child JVM
 * ({@link DriverKillProbe}) on this JVM's class path.
 */
@Tag("multiprocess")
class FerriteShuffleDriverKilledTest {
  @Test
  void aSigkilledDriversShuffleFilesAreReclaimedAfterItsLease() throws Exception {
    String property = System.getProperty("tests.seed");
    long seed = property == null ? new Random().nextLong() : Long.decode(property);
    try (SparkTestCluster cluster = SparkTestCluster.start()) {
      long usedBefore = used(cluster);
      Path log = cluster.dir.resolve("driver.log");
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.add("-Xmx512m");
      for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
        if (a.startsWith("--add-opens") || a.startsWith("-Djdk.reflect")) {
          command.add(a); // what Spark needs on Java 17 (the pom's argLine)
        }
      }
      command.add("-cp");
      command.add(classPath());
      command.add(DriverKillProbe.class.getName());
      command.add(cluster.master);
      command.add(SparkTestCluster.CREDENTIALS.clusterId());
      command.add(cluster.secretFile.toString());
      command.add(cluster.dir.resolve("no-cluster-file").toString());
      command.add(Long.toString(seed));
      Process driver =
          new ProcessBuilder(command).redirectError(log.toFile()).redirectInput(devNull()).start();
      try {
        String mapped = awaitLine(driver, "MAPPED ", log);
        String appDir = "/spark/" + mapped.split(" ")[1];
        assertEquals("101", mapped.split(" ")[2], "with -Dtests.seed=" + seed);
        assertTrue(cluster.nodes.lookup(appDir).ephemeral(), appDir + " is the driver's");
        assertTrue(
            cluster.tree(appDir).stream().anyMatch(p -> p.contains("/map-")),
            "the map outputs are in Ferrite before the kill: " + cluster.tree(appDir));
        assertTrue(used(cluster) > usedBefore);

        driver.destroyForcibly(); // SIGKILL: Spark's stop never runs
        assertTrue(driver.waitFor(30, TimeUnit.SECONDS), "the driver JVM exited");

        // Bounded waits (the lease is 10 s): they fail, never hang, and assert no duration.
        for (int i = 0; i < 600 && cluster.nodes.exists(appDir); i++) {
          Thread.sleep(100);
        }
        assertFalse(cluster.nodes.exists(appDir), appDir + " removed after the driver's lease");
        assertEquals(List.of(), cluster.tree(appDir));
        assertTrue(cluster.nodes.exists("/spark"), "the shared root is not the driver's");
        for (int i = 0; i < 300 && used(cluster) != usedBefore; i++) {
          Thread.sleep(100);
        }
        assertEquals(usedBefore, used(cluster), "the map outputs' memory freed");
      } finally {
        driver.destroyForcibly();
        driver.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  /** Memory used on the cluster's servers. */
  private static long used(SparkTestCluster cluster) {
    long u = 0;
    for (var m : cluster.nodes.client().status().members()) {
      for (var c : m.usage()) {
        u += c.usedBytes();
      }
    }
    return u;
  }

  /** The first stdout line of {@code p} starting with {@code prefix}; fails after 3 minutes. */
  private static String awaitLine(Process p, String prefix, Path log) throws Exception {
    BlockingQueue<String> lines = new ArrayBlockingQueue<>(1);
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                  if (line.startsWith(prefix)) {
                    lines.offer(line);
                  }
                }
              } catch (java.io.IOException e) {
                // the process was killed: its stdout closed
              }
            },
            "driver-stdout");
    reader.setDaemon(true);
    reader.start();
    String line = lines.poll(180, TimeUnit.SECONDS);
    if (line == null) {
      throw new AssertionError(
          "the driver printed no " + prefix + "line; its log ends:\n" + tail(log));
    }
    return line;
  }

  private static String tail(Path log) throws java.io.IOException {
    List<String> all = Files.exists(log) ? Files.readAllLines(log) : List.of();
    return String.join("\n", all.subList(Math.max(0, all.size() - 40), all.size()));
  }

  private static File devNull() {
    return new File("/dev/null");
  }

  /** This JVM's class path without surefire's own jars. */
  private static String classPath() {
    List<String> out = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.contains("surefire")) {
        out.add(e);
      }
    }
    return String.join(File.pathSeparator, out);
  }
}
