package io.ferrite.sparkbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.JsonReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The whole bench at a tiny size in {@code local-cluster[2,1,512]} (two executor JVMs; SPARK_HOME
 * is set by surefire, see the pom): both shuffles' jobs verify their outputs against the input (a
 * difference fails the run, see {@link SparkJobsTest}), every Ferrite figure stands beside the
 * built-in's in the JSON the other benches write, and the run leaves no directory of its own in
 * {@code java.io.tmpdir} or {@code /dev/shm}.
 */
@Tag("multiprocess")
class SparkBenchTest {
  @Test
  void tinyRunReportsEveryFigureBesideItsPeerAndCleansUp() throws Exception {
    Set<String> tmpBefore = ours(Path.of(System.getProperty("java.io.tmpdir")));
    Set<String> shmBefore = ours(Path.of("/dev/shm"));
    SparkBench.Options o = new SparkBench.Options(2L << 20, 1, 2, 512, 1L << 20, null, 3);
    BenchReport report = SparkBench.run(o, null);
    BenchReport json = JsonReport.read(report.toJson());
    assertEquals("spark", json.suite());
    List<String> names =
        List.of(
            "sortByKey.2MiB.job",
            "sortByKey.2MiB.shuffleWrite",
            "sortByKey.2MiB.fetchWait",
            "groupByKey.2MiB.job",
            "groupByKey.2MiB.shuffleWrite",
            "groupByKey.2MiB.fetchWait",
            "broadcast.1MiB.x8");
    for (String name : names) {
      BenchResult builtIn = json.require("builtin." + name);
      BenchResult ferrite = json.require("ferrite." + name);
      assertEquals("builtin." + name, ferrite.reference(), name);
      assertEquals(builtIn.value(), ferrite.referenceValue(), name);
      assertEquals("ms", ferrite.unit(), name);
      assertTrue(ferrite.value() >= 0 && builtIn.value() >= 0, name);
    }
    assertTrue(json.require("ferrite.sortByKey.2MiB.job").value() > 0, "a job takes time");
    assertTrue(json.require("ferrite.broadcast.1MiB.x8").ratio() > 0, "the broadcast's ratio");
    assertEquals(2 * names.size(), json.results().size(), "results: " + json.results());
    assertEquals(tmpBefore, ours(Path.of(System.getProperty("java.io.tmpdir"))), "tmpdir");
    assertEquals(shmBefore, ours(Path.of("/dev/shm")), "/dev/shm");
  }

  /** The bench's directories in {@code dir} (it names them ferrite-spark-bench-*). */
  private static Set<String> ours(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith("ferrite-spark-bench-"))
          .collect(Collectors.toSet());
    }
  }
}
