package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.nodes.NodesProtocol;
import io.ferrite.nodes.master.NodesMaster;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.Success$;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * {@link ShuffleJobs} in Spark's {@code local-cluster[2,1,1024]}: a master, two workers and two
 * executor JVMs, whose map and reduce tasks reach the in-test Ferrite cluster with clients of their
 * own; the built-in side, the expected results, runs first in this JVM ({@link #builtInConf}).
 * {@code SPARK_HOME} (set by surefire, see the pom) gets a {@code jars/} of links to this JVM's
 * class path jars (Spark's, spark-sql's for the DataFrame job, Ferrite's), and the class
 * directories (this module's and its Ferrite dependencies') go on {@code
 * spark.executor.extraClassPath}. Then the executor faults: an executor JVM SIGKILLed after a map
 * stage, and during one. Spark's stop ends its executors and workers.
 */
@Tag("multiprocess")
class FerriteShuffleLocalClusterTest extends ShuffleJobs {
  private static final AtomicInteger EXECUTORS_REMOVED = new AtomicInteger();

  @Override
  protected SparkConf conf() throws Exception {
    String classDirs = sparkHome();
    return new SparkConf()
        .setMaster("local-cluster[2,1,1024]")
        .setAppName("ferrite-shuffle-local-cluster")
        .set("spark.executor.extraClassPath", classDirs)
        .set("spark.driver.extraClassPath", classDirs);
  }

  /**
   * The built-in side, the jobs' expected results, in this JVM ({@code local[2]}): the results do
   * not depend on where the tasks ran (FerriteShuffleLocalTest compares both shuffles in one JVM),
   * and a second local-cluster would start two more executor JVMs only to compute them.
   */
  @Override
  protected SparkConf builtInConf(SparkConf conf) {
    return conf.setMaster("local[2]");
  }

  /** The slowed job's result (with no sleep) on the built-in shuffle. */
  @Override
  protected void builtIn(SparkSession builtIn) {
    EXPECTED_SLOW_BUILT_IN.addAll(collect(slowSums(jsc(builtIn), data(20_000), 0)));
  }

  @Override
  protected void started() {
    spark
        .sparkContext()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
                EXECUTORS_REMOVED.incrementAndGet();
              }
            });
  }

  private List<Integer> data(int n) {
    return ints(seed, n, 1_000_000, 10);
  }

  private static JavaPairRDD<Integer, Long> sums(JavaSparkContext sc, List<Integer> data) {
    return sc.parallelize(data, 4)
        .mapToPair(i -> new Tuple2<>(i % 101, (long) i))
        .reduceByKey(Long::sum, 3);
  }

  private static List<String> collect(JavaPairRDD<Integer, Long> rdd) {
    return rdd.map(t -> t._1() + "=" + t._2()).collect().stream().sorted().toList();
  }

  /**
   * An executor SIGKILLed after the map stage takes no map output with it: the outputs are in
   * Ferrite and registered under locations of their own, so a second job over the same shuffle runs
   * no map task again (no new map output File) and gives the same result.
   */
  @Test
  void anExecutorKilledAfterTheMapStageTakesNoOutputWithIt() throws Exception {
    JavaPairRDD<Integer, Long> rdd = sums(jsc(), data(20_000));
    List<String> first = collect(rdd);
    List<String> outputs = mapOutputs();
    kill(executorProcess(spark.sparkContext().applicationId()));
    assertEquals(first, collect(rdd), "the result after the executor's loss");
    // Only new Files count: Spark's ContextCleaner may remove an earlier test's shuffle meanwhile.
    List<String> again = new java.util.ArrayList<>(mapOutputs());
    again.removeAll(outputs);
    assertEquals(List.of(), again, "no map task ran again (no new map output File)");
  }

  /** SIGKILLs an executor JVM and waits (bounded) until Spark has seen it go. */
  private static void kill(ProcessHandle executor) throws Exception {
    int before = EXECUTORS_REMOVED.get();
    executor.destroyForcibly();
    executor.onExit().get(30, TimeUnit.SECONDS);
    for (int i = 0; i < 600 && EXECUTORS_REMOVED.get() == before; i++) {
      Thread.sleep(100);
    }
    assertTrue(EXECUTORS_REMOVED.get() > before, "Spark saw the executor go");
  }

  /**
   * An executor SIGKILLed while the map stage runs (each map task slowed, so both executors are
   * busy with the stage's first tasks when it dies): Spark runs its tasks again elsewhere, the
   * result equals the built-in shuffle's, and once the dead executor's session lease has run out
   * the master holds no open writer (a File it was writing is dropped by its session's end).
   */
  @Test
  void anExecutorKilledDuringTheMapStageIsRetriedWithTheRightResult() throws Exception {
    AtomicInteger mapStage = new AtomicInteger(-1);
    AtomicInteger mapTasksDone = new AtomicInteger();
    Set<String> executorsDone = ConcurrentHashMap.newKeySet();
    AtomicBoolean mapStageDone = new AtomicBoolean();
    SparkListener watch =
        new SparkListener() {
          @Override
          public void onTaskStart(SparkListenerTaskStart start) {
            mapStage.compareAndSet(-1, start.stageId()); // the job's first stage is the map
          }

          @Override
          public void onTaskEnd(SparkListenerTaskEnd end) {
            if (end.stageId() == mapStage.get() && end.reason() instanceof Success$) {
              mapTasksDone.incrementAndGet();
              executorsDone.add(end.taskInfo().executorId());
            }
          }

          @Override
          public void onStageCompleted(SparkListenerStageCompleted done) {
            if (done.stageInfo().stageId() == mapStage.get()) {
              mapStageDone.set(true);
            }
          }
        };
    spark.sparkContext().addSparkListener(watch);
    ExecutorService jobs =
        Executors.newSingleThreadExecutor(
            new io.ferrite.fabric.NamedThreadFactory("test-spark-job", true));
    try {
      Future<List<String>> job = jobs.submit(() -> collect(slowSums(jsc(), data(20_000), 1500)));
      // Both executors have finished a map task (their outputs are in Ferrite) and run others.
      for (int i = 0; i < 1200 && executorsDone.size() < 2 && !job.isDone(); i++) {
        Thread.sleep(20);
      }
      assertEquals(2, executorsDone.size(), "both executors finished a map task");
      kill(executorProcess(spark.sparkContext().applicationId()));
      assertFalse(mapStageDone.get(), "the executor died during the map stage");
      assertEquals(EXPECTED_SLOW_BUILT_IN, awaitOrDump(job, 300), "with -Dtests.seed=" + seed);
      // The dead executor's finished outputs were not its to lose: no map task ran twice (with
      // the executor's own BlockManagerId as their location Spark would run them again).
      spark.sparkContext().listenerBus().waitUntilEmpty();
      assertEquals(8, mapTasksDone.get(), "map tasks that succeeded");
    } finally {
      jobs.shutdownNow();
      spark.sparkContext().removeSparkListener(watch);
    }
    NodesMaster nm = (NodesMaster) cluster.harness.master.state().extension(NodesProtocol.SERVICE);
    for (int i = 0; i < 600 && !Long.valueOf(0).equals(nm.describe().get("open writers")); i++) {
      Thread.sleep(100);
    }
    assertEquals(0L, nm.describe().get("open writers"), "no File left open by the dead executor");
  }

  /** {@link #sums} over 8 map tasks, each first sleeping {@code millis} (0: not slowed). */
  private static JavaPairRDD<Integer, Long> slowSums(
      JavaSparkContext sc, List<Integer> data, long millis) {
    return sc.parallelize(data, 8)
        .mapPartitions(
            it -> {
              if (millis > 0) {
                Thread.sleep(millis);
              }
              return it;
            })
        .mapToPair(i -> new Tuple2<>(i % 101, (long) i))
        .reduceByKey(Long::sum, 3);
  }

  /** The job's result within {@code seconds}, or a failure carrying every thread's stack. */
  private static <T> T awaitOrDump(Future<T> job, int seconds) throws Exception {
    try {
      return job.get(seconds, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      StringBuilder dump = new StringBuilder();
      for (java.lang.management.ThreadInfo t :
          java.lang.management.ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
        dump.append(t);
      }
      job.cancel(true);
      throw new AssertionError("the job did not end within " + seconds + " s:\n" + dump, e);
    }
  }

  private List<String> mapOutputs() {
    return cluster.tree(appDir).stream().filter(p -> p.contains("/map-")).sorted().toList();
  }

  /** One of this application's executor JVMs (a child of this JVM's in-process worker). */
  private static ProcessHandle executorProcess(String appId) {
    return ProcessHandle.current()
        .descendants()
        .filter(
            p -> {
              String cmd = String.join(" ", p.info().arguments().orElse(new String[0]));
              return cmd.contains("CoarseGrainedExecutorBackend") && cmd.contains(appId);
            })
        .findFirst()
        .orElseThrow(() -> new AssertionError("no executor JVM of " + appId));
  }

  private static final List<String> EXPECTED_SLOW_BUILT_IN = new ArrayList<>();

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
