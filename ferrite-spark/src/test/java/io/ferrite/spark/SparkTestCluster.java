package io.ferrite.spark;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.Nodes;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;

/**
 * A real Ferrite cluster in the test JVM for the Spark tests: a master on tcp and shm and two
 * memory servers ({@link ClusterHarness}), 64 KiB blocks (so map outputs span blocks) and 32 MiB of
 * dram each; the client secret in a file, as a user's {@code spark.ferrite.secret.file} names it.
 */
final class SparkTestCluster implements AutoCloseable {
  static final Credentials CREDENTIALS =
      new Credentials(
          "spark-test", "0123456789abcdef-spark-secret!!".getBytes(StandardCharsets.US_ASCII));

  final ClusterHarness harness;
  final Path dir;
  final Path secretFile;
  final String master;
  final Nodes nodes;

  static SparkTestCluster start() throws IOException, InterruptedException {
    return start("64k", "32m");
  }

  /** With {@code blockSize} blocks and {@code dram} of memory on each of the two servers. */
  static SparkTestCluster start(String blockSize, String dram)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("ferrite-spark-");
    ClusterHarness h = null;
    try {
      h =
          new ClusterHarness(
              dir.resolve("data"),
              CREDENTIALS,
              true,
              Map.of(
                  FerriteConfig.BLOCK_SIZE, blockSize,
                  FerriteConfig.REGION_SIZE, "4m",
                  FerriteConfig.CAPACITY_DRAM, dram,
                  FerriteConfig.CAPACITY_DISK, "0",
                  // A loaded 2-core machine must not see servers or sessions expire.
                  FerriteConfig.HEARTBEAT_INTERVAL, "100ms",
                  FerriteConfig.DEAD_TIMEOUT, "5s",
                  FerriteConfig.SESSION_LEASE, "10s"));
      h.startMaster();
      h.startServer("s1");
      h.startServer("s2");
      h.awaitServers(2);
      return new SparkTestCluster(h, dir);
    } catch (IOException | InterruptedException | RuntimeException | Error e) {
      try {
        if (h != null) {
          h.close();
        }
        FileTrees.delete(dir);
      } catch (IOException | RuntimeException again) {
        e.addSuppressed(again);
      }
      throw e;
    }
  }

  private SparkTestCluster(ClusterHarness harness, Path dir) throws IOException {
    this.harness = harness;
    this.dir = dir;
    Path root = dir.resolve("secret");
    Files.writeString(
        Files.createFile(
            root,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))),
        HexFormat.of().formatHex(CREDENTIALS.secret()) + "\n",
        StandardCharsets.US_ASCII);
    this.secretFile = Secrets.writeClientSecret(root, CREDENTIALS.secret());
    URI m = URI.create(harness.masterAddress());
    this.master = "ferrite://" + m.getHost() + ":" + m.getPort();
    this.nodes = new Nodes(harness.client());
  }

  /** Sets the keys that reach this cluster; never reads the user's own cluster file. */
  SparkConf configure(SparkConf conf) {
    return conf.set("spark.shuffle.manager", FerriteShuffleManager.class.getName())
        .set(FerriteSparkConf.CLUSTER, master)
        .set(FerriteSparkConf.CLUSTER_ID, CREDENTIALS.clusterId())
        .set(FerriteSparkConf.SECRET_FILE, secretFile.toString())
        .set(FerriteSparkConf.CLUSTER_FILE, dir.resolve("no-cluster-file").toString());
  }

  /** Every node under {@code path} (depth first), or an empty list if it does not exist. */
  List<String> tree(String path) {
    List<String> out = new ArrayList<>();
    if (!nodes.exists(path)) {
      return out;
    }
    for (NodeInfo n : nodes.list(path)) {
      String child = n.path().startsWith("/") ? n.path() : path + "/" + n.path();
      out.add(child);
      if (n.type().isContainer()) {
        out.addAll(tree(child));
      }
    }
    return out;
  }

  @Override
  public void close() throws IOException {
    try {
      harness.close();
    } finally {
      FileTrees.delete(dir);
    }
  }
}
