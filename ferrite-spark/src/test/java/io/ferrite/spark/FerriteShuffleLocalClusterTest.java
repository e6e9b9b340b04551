package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * Spark's {@code local-cluster[2,1,1024]}: a master, two workers and two executor JVMs, whose map
 * and reduce tasks reach the in-test Ferrite cluster with clients of their own. {@code SPARK_HOME}
 * (set by surefire, see the pom) gets a {@code jars/} of links to this JVM's class path jars, and
 * the class directories (this module's and its Ferrite dependencies') go on {@code
 * spark.executor.extraClassPath}. The result is compared with the same job on Spark's built-in
 * shuffle in {@code local[2]}; after the job and Spark's stop no node of the application remains.
 */
@Tag("multiprocess")
class FerriteShuffleLocalClusterTest {

  private static List<String> job(JavaSparkContext sc, long seed) {
    Random r = new Random(seed);
    List<Integer> data = new ArrayList<>();
    for (int i = 0; i < 50_000; i++) {
      data.add(r.nextInt(1_000_000));
    }
    List<String> out = new ArrayList<>();
    // A sort (ordering on the reduce side) and an aggregation with map-side combine.
    sc.parallelize(data, 4)
        .mapToPair(i -> new Tuple2<>(i, i % 10))
        .sortByKey(true, 3)
        .map(t -> t._1() + ":" + t._2())
        .collect()
        .forEach(out::add);
    sc
        .parallelize(data, 4)
        .mapToPair(i -> new Tuple2<>(i % 101, (long) i))
        .reduceByKey(Long::sum, 3)
        .map(t -> t._1() + "=" + t._2())
        .collect()
        .stream()
        .sorted()
        .forEach(out::add);
    return out;
  }

  private static SparkConf base(String master) {
    return new SparkConf()
        .setMaster(master)
        .setAppName("ferrite-shuffle-local-cluster")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1");
  }

  @Test
  void twoExecutorJvmsShuffleThroughFerrite() throws Exception {
    String property = System.getProperty("tests.seed");
    long seed = property == null ? new Random().nextLong() : Long.decode(property);
    List<String> expected;
    try (JavaSparkContext builtIn = new JavaSparkContext(base("local[2]"))) {
      expected = job(builtIn, seed);
    }
    String classDirs = sparkHome();
    try (SparkTestCluster cluster = SparkTestCluster.start()) {
      String appDir;
      SparkConf conf =
          cluster
              .configure(base("local-cluster[2,1,1024]"))
              .set("spark.executor.extraClassPath", classDirs)
              .set("spark.driver.extraClassPath", classDirs);
      try (JavaSparkContext sc = new JavaSparkContext(conf)) {
        appDir = "/spark/" + sc.sc().applicationId();
        assertEquals(expected, job(sc, seed), "with -Dtests.seed=" + seed);
        assertTrue(
            cluster.tree(appDir).stream().anyMatch(p -> p.contains("/map-")),
            "the executors wrote their map outputs to Ferrite");
      }
      assertEquals(List.of(), cluster.tree(appDir), "the application's nodes after Spark stopped");
      assertFalse(cluster.nodes.exists(appDir));
    }
  }

  /**
   * Fills {@code $SPARK_HOME/jars} with links to the class path's jars (what an executor JVM loads,
   * Spark's and Ferrite's alike); returns the class path's directories, for extraClassPath.
   */
  private static String sparkHome() throws Exception {
    String home = System.getenv("SPARK_HOME");
    assertTrue(home != null, "SPARK_HOME is set by surefire (ferrite-spark's pom)");
    Path jars = Files.createDirectories(Path.of(home, "jars"));
    List<String> dirs = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(entry).toAbsolutePath();
      if (Files.isDirectory(p)) {
        dirs.add(p.toString());
      } else if (entry.endsWith(".jar") && !entry.contains("surefire")) {
        Path link = jars.resolve(p.getFileName());
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, p);
      }
    }
    return String.join(File.pathSeparator, dirs);
  }
}
