package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link FerriteBroadcast} in {@code local[2,4]} (driver and executor share the test JVM, but each
 * task gets its own deserialized copy of the handle, without the driver's value) against an in-test
 * cluster with 64 KiB blocks, with Kryo as Spark's serializer. Every task of a job reads the value
 * and returns what it saw; the File is read once per JVM however many tasks ask; after {@link
 * FerriteBroadcast#destroy} the File is gone and a read fails naming it; after Spark's stop no node
 * of the application remains.
 */
@ExtendWith(SeedExtension.class)
class FerriteBroadcastLocalTest {
  private static final int TASKS = 8;
  private static SparkTestCluster cluster;
  private static JavaSparkContext sc;
  private static String appDir;

  @BeforeAll
  static void start() throws Exception {
    cluster = SparkTestCluster.start("64k", "64m");
    SparkConf conf =
        cluster
            .configure(new SparkConf())
            .setMaster("local[2,4]")
            .setAppName("ferrite-broadcast-test")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
    sc = new JavaSparkContext(conf);
    appDir = "/spark/" + sc.sc().applicationId();
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (sc != null) {
        sc.stop();
        assertFalse(cluster.nodes.exists(appDir), appDir + " after Spark stopped");
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  /** What each of {@link #TASKS} tasks saw of {@code b}'s value, by {@code view}. */
  private static <T, R> List<R> everyTask(
      FerriteBroadcast<T> b, org.apache.spark.api.java.function.Function<T, R> view) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      ids.add(i);
    }
    return sc.parallelize(ids, TASKS).map(i -> view.call(b.value())).collect();
  }

  @Test
  void aBigValueIsReadByEveryTaskFromOneReadOfItsFile(Random random) {
    // 3 MiB: about 48 blocks of 64 KiB, more than the 8 reads the stream keeps in flight.
    byte[] value = new byte[3 << 20];
    random.nextBytes(value);
    FerriteBroadcast<byte[]> b = FerriteBroadcast.create(sc, value);
    assertTrue(b.size() > value.length, "serialized size " + b.size());
    assertEquals(b.size(), cluster.nodes.lookup(b.path()).size());
    assertTrue(b.path().startsWith(appDir + "/"), b.path());

    long before = FerriteBroadcast.fileReads();
    List<byte[]> seen = everyTask(b, v -> v);
    assertEquals(TASKS, seen.size());
    for (byte[] s : seen) {
      assertArrayEquals(value, s);
    }
    assertEquals(1, FerriteBroadcast.fileReads() - before, "File reads by " + TASKS + " tasks");
    assertEquals(TASKS, everyTask(b, Arrays::hashCode).stream().distinct().count() * TASKS);
    assertEquals(1, FerriteBroadcast.fileReads() - before, "File reads after a second job");

    // unpersist drops the JVM's copy: the next job reads the File again, once.
    b.unpersist(true);
    assertEquals(List.of(Arrays.hashCode(value)), distinct(everyTask(b, Arrays::hashCode)));
    assertEquals(2, FerriteBroadcast.fileReads() - before, "File reads after unpersist");
    b.destroy();
  }

  @Test
  void smallNullAndEmptyValues() {
    FerriteBroadcast<String> small = FerriteBroadcast.create(sc, "ferrite");
    FerriteBroadcast<List<String>> empty = FerriteBroadcast.create(sc, new ArrayList<>());
    FerriteBroadcast<Object> none = FerriteBroadcast.create(sc, null);
    assertEquals(List.of("ferrite"), distinct(everyTask(small, v -> v)));
    assertEquals(List.of(0), distinct(everyTask(empty, List::size)));
    assertEquals(List.of(true), distinct(everyTask(none, v -> v == null)));
    assertNull(none.value());
    assertEquals("ferrite", small.value());
    small.destroy();
    empty.destroy();
    none.destroy();
  }

  @Test
  void destroyRemovesTheFileAndALaterReadFailsNamingIt() {
    FerriteBroadcast<String> b = FerriteBroadcast.create(sc, "gone soon");
    assertEquals(List.of("gone soon"), distinct(everyTask(b, v -> v)));
    assertTrue(cluster.nodes.exists(b.path()));
    b.destroy();
    assertFalse(cluster.nodes.exists(b.path()), b.path() + " after destroy");

    IllegalStateException onDriver = assertThrows(IllegalStateException.class, b::value);
    assertTrue(onDriver.getMessage().contains(b.path()), onDriver.getMessage());
    // A task's copy of the handle: its executor's copy was dropped, and the File is gone.
    SparkException inTask = assertThrows(SparkException.class, () -> everyTask(b, v -> v));
    assertTrue(
        inTask.getMessage().contains(b.path()) && inTask.getMessage().contains("gone"),
        inTask.getMessage());
  }

  private static <R> List<R> distinct(List<R> values) {
    return values.stream().distinct().toList();
  }
}
