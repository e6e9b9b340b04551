package io.ferrite.sparkbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bench's checks, in {@code local[2]} on Spark's built-in shuffle (the local-cluster run with
 * both shuffles is {@link SparkBenchTest}): the jobs pass against the input's own summary and fail
 * the run when the records or the checksum differ, so a shuffle that loses, duplicates or alters a
 * record cannot be timed as if it worked.
 */
class SparkJobsTest {
  private static JavaSparkContext sc;
  private static final SparkJobs.Input SORT = new SparkJobs.Input(7, 3, 2000, 0);
  private static final SparkJobs.Input GROUP = new SparkJobs.Input(8, 3, 2000, 60);

  @BeforeAll
  static void start() {
    sc =
        new JavaSparkContext(
            new SparkConf()
                .setMaster("local[2]")
                .setAppName("spark-jobs-test")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer"));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  @Test
  void theJobsPassAgainstTheInputsSummary() {
    SparkJobs.Metrics metrics = new SparkJobs.Metrics();
    sc.sc().addSparkListener(metrics);
    SparkJobs.Summary sort = SparkJobs.inputSummary(sc, SORT);
    assertEquals(6000, sort.records);
    SparkJobs.Timing t = SparkJobs.sort(sc, metrics, SORT, 4, sort);
    assertTrue(t.shuffleWriteNanos() > 0, "the listener summed the tasks' shuffle write time");
    long[] groups = {-1};
    SparkJobs.group(sc, metrics, GROUP, 4, SparkJobs.inputSummary(sc, GROUP), groups);
    assertTrue(groups[0] > 0 && groups[0] <= 60, groups[0] + " groups of keys from 60");
  }

  @Test
  void aLostOrAlteredRecordFailsTheRun() {
    SparkJobs.Metrics metrics = new SparkJobs.Metrics();
    sc.sc().addSparkListener(metrics);
    SparkJobs.Summary expected = SparkJobs.inputSummary(sc, SORT);
    expected.checksum++;
    IllegalStateException sort =
        assertThrows(
            IllegalStateException.class, () -> SparkJobs.sort(sc, metrics, SORT, 4, expected));
    assertTrue(sort.getMessage().startsWith("sortByKey gave 6000 records"), sort.getMessage());
    SparkJobs.Summary group = SparkJobs.inputSummary(sc, GROUP);
    group.records--;
    IllegalStateException g =
        assertThrows(
            IllegalStateException.class,
            () -> SparkJobs.group(sc, metrics, GROUP, 4, group, new long[1]));
    assertTrue(g.getMessage().startsWith("groupByKey gave 6000 records"), g.getMessage());
  }
}
