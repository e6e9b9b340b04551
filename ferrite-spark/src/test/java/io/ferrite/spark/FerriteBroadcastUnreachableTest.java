package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.Secrets;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FerriteBroadcast#create} with no cluster behind {@code spark.ferrite.cluster} (a port just
 * closed): it fails at once, naming the cluster and the path, with the connect failure as the
 * cause; Spark itself (whose shuffle manager connects lazily) starts and stops cleanly.
 */
class FerriteBroadcastUnreachableTest {
  @Test
  void createNamesTheClusterAndCarriesTheCause(@TempDir Path dir) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path secret = dir.resolve("secret");
    Secrets.readOrCreate(secret);
    String master = "ferrite://127.0.0.1:" + port;
    SparkConf conf =
        new SparkConf()
            .setMaster("local[1]")
            .setAppName("ferrite-broadcast-unreachable")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.shuffle.manager", FerriteShuffleManager.class.getName())
            .set(FerriteSparkConf.CLUSTER, master)
            .set(FerriteSparkConf.CLUSTER_ID, "nobody")
            .set(FerriteSparkConf.SECRET_FILE, secret.toString())
            .set(FerriteSparkConf.CLUSTER_FILE, dir.resolve("none").toString())
            .set(FerriteSparkConf.RPC_TIMEOUT, "1s");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      IllegalStateException e =
          assertThrows(IllegalStateException.class, () -> FerriteBroadcast.create(sc, "v"));
      assertTrue(e.getMessage().contains(master), e.getMessage());
      assertTrue(e.getMessage().contains("/broadcast-"), e.getMessage());
      assertNotNull(e.getCause(), "the connect failure as the cause");
    }
    assertTrue(Files.exists(secret));
  }
}
