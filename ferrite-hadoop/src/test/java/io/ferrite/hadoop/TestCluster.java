package io.ferrite.hadoop;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/**
 * A real cluster in this JVM for the Hadoop tests: a master on tcp and two memory servers on tcp
 * and shm ({@link ClusterHarness}), 64 KiB blocks and 8 MiB of dram per server; its secret in a
 * file of its own. {@link #close()} closes every cached Hadoop {@link FileSystem} first (they hold
 * client sessions), then the cluster, then deletes its directory.
 */
public final class TestCluster implements AutoCloseable {
  static final Credentials CREDENTIALS =
      new Credentials(
          "hadoop-test", "0123456789abcdef-hadoop-secret".getBytes(StandardCharsets.US_ASCII));
  public static final long BLOCK_SIZE = 64 * 1024;

  public final ClusterHarness harness;
  public final Path dir;
  public final Path secretFile;
  public final URI uri;
  private final String fabric;

  /**
   * Starts the cluster; clients of {@link #configuration()} use {@code fabric} (auto, tcp, shm).
   */
  public static TestCluster start(String fabric) throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("ferrite-hadoop-");
    ClusterHarness h = null;
    try {
      h =
          new ClusterHarness(
              dir.resolve("data"),
              CREDENTIALS,
              true,
              Map.of(
                  FerriteConfig.BLOCK_SIZE, "64k",
                  FerriteConfig.REGION_SIZE, "1m",
                  FerriteConfig.CAPACITY_DRAM, "8m",
                  FerriteConfig.CAPACITY_DISK, "0",
                  // A loaded 2-core machine must not see servers or sessions expire.
                  FerriteConfig.HEARTBEAT_INTERVAL, "100ms",
                  FerriteConfig.DEAD_TIMEOUT, "5s",
                  FerriteConfig.SESSION_LEASE, "10s"));
      h.startMaster();
      h.startServer("s1");
      h.startServer("s2");
      h.awaitServers(2);
      return new TestCluster(h, dir, fabric);
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

  private TestCluster(ClusterHarness harness, Path dir, String fabric) throws IOException {
    this.harness = harness;
    this.dir = dir;
    this.fabric = fabric;
    Path root = dir.resolve("secret");
    Files.writeString(
        Files.createFile(
            root,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))),
        HexFormat.of().formatHex(CREDENTIALS.secret()) + "\n",
        StandardCharsets.US_ASCII);
    // The file system is a data client: the whole suite runs with the least role, CLIENT.
    this.secretFile =
        io.ferrite.kernel.config.Secrets.writeClientSecret(root, CREDENTIALS.secret());
    URI master = URI.create(harness.masterAddress());
    this.uri = URI.create("ferrite://" + master.getHost() + ":" + master.getPort() + "/");
  }

  /** A Hadoop configuration that reaches this cluster: secret file, cluster id, fabric. */
  public Configuration configuration() {
    return configure(new Configuration());
  }

  /** Sets this cluster's keys in {@code conf}; never reads the user's own cluster file. */
  public Configuration configure(Configuration conf) {
    conf.set(FerriteFsConfig.SECRET_FILE, secretFile.toString());
    conf.set(FerriteFsConfig.CLUSTER_ID, CREDENTIALS.clusterId());
    conf.set(FerriteFsConfig.CLUSTER_FILE, dir.resolve("no-cluster-file").toString());
    conf.set(FerriteFsConfig.FABRIC, fabric);
    return conf;
  }

  @Override
  public void close() throws IOException {
    try {
      FileSystem.closeAll();
    } finally {
      try {
        harness.close();
      } finally {
        FileTrees.delete(dir);
      }
    }
  }
}
