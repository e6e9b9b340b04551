package io.ferrite.sparkbench;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * A {@code SPARK_HOME} for {@code local-cluster} mode without a Spark distribution: its workers
 * (threads of the driver's JVM) start executor JVMs with the class path {@code $SPARK_HOME/jars/*}
 * (Spark's launcher, {@code SPARK_SCALA_VERSION} naming the Scala build), so {@code jars/} gets a
 * link to every jar on this JVM's class path. A {@code java -jar} launch has one entry, the jar,
 * whose manifest's {@code Class-Path} names the rest: those are followed. Class directories (a
 * test's {@code target/classes}) cannot go in {@code jars/}: they are returned for {@code
 * spark.executor.extraClassPath}.
 *
 * <p>Workers read the variable {@code SPARK_HOME} from their JVM's environment, which a JVM cannot
 * set for itself: whoever starts this JVM sets it ({@code ferrite bench spark}, surefire).
 */
public final class SparkHome {
  /** The environment variable local-cluster's workers read. */
  public static final String ENV = "SPARK_HOME";

  private SparkHome() {}

  /**
   * Fills {@code $SPARK_HOME/jars} with links to this JVM's class path jars; returns the class
   * directories, joined by the path separator ("" if none).
   *
   * @throws IllegalStateException if {@code SPARK_HOME} is not set
   */
  public static String prepare() throws IOException {
    String home = System.getenv(ENV);
    if (home == null || home.isBlank()) {
      throw new IllegalStateException(
          ENV
              + " is not set: local-cluster's workers start executors from $"
              + ENV
              + "/jars (ferrite bench spark sets it to a temporary directory)");
    }
    Path jars = Files.createDirectories(Path.of(home, "jars"));
    List<String> dirs = new ArrayList<>();
    for (Path p : classPath(System.getProperty("java.class.path"))) {
      if (Files.isDirectory(p)) {
        dirs.add(p.toString());
      } else if (p.getFileName().toString().endsWith(".jar")
          && !p.getFileName().toString().contains("surefire")) {
        Path link = jars.resolve(p.getFileName());
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, p);
      }
    }
    return String.join(File.pathSeparator, dirs);
  }

  /** The entries of {@code classPath}, with the jars their manifests' Class-Path names. */
  static Set<Path> classPath(String classPath) throws IOException {
    Set<Path> out = new LinkedHashSet<>();
    for (String entry : classPath.split(File.pathSeparator)) {
      if (!entry.isEmpty()) {
        add(Path.of(entry).toAbsolutePath().normalize(), out);
      }
    }
    return out;
  }

  private static void add(Path p, Set<Path> out) throws IOException {
    if (!Files.exists(p) || !out.add(p) || Files.isDirectory(p)) {
      return;
    }
    try (JarFile jar = new JarFile(p.toFile())) {
      Manifest m = jar.getManifest();
      String cp = m == null ? null : m.getMainAttributes().getValue("Class-Path");
      if (cp == null) {
        return;
      }
      for (String rel : cp.trim().split("\\s+")) {
        if (!rel.isEmpty() && !rel.contains(":")) {
          add(p.resolveSibling(rel).normalize(), out);
        }
      }
    }
  }
}
