package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CliCapture} for the faces' commands ({@code ferrite kv}, {@code ferrite tree}): a master
 * and a memory server {@code s1} (tcp + shm) in this JVM, started before each test with a cluster
 * file that {@link #run} passes to every command, and closed after it (also when it fails).
 */
abstract class FaceCliCapture extends CliCapture {
  @TempDir Path dir;
  @AutoClose ClusterHarness cluster;
  Path clusterFile;
  private final String clusterIdPrefix;

  /** {@code clusterIdPrefix}: the cluster id before this JVM's pid (it names the shm files). */
  FaceCliCapture(String clusterIdPrefix) {
    this.clusterIdPrefix = clusterIdPrefix;
  }

  /** The test's configuration keys, over (and beside) the ones every face test needs. */
  abstract Map<String, String> config();

  @BeforeEach
  void startCluster() throws IOException {
    Path secret = dir.resolve("secret");
    String id = clusterIdPrefix + ProcessHandle.current().pid();
    Map<String, String> config = new HashMap<>();
    // kv shard regions (the tables' default 16 MiB extent regions) and tree meganodes count
    // against it.
    config.put(FerriteConfig.CAPACITY_DRAM, "512m");
    config.put(FerriteConfig.CAPACITY_DISK, "0");
    // Not the harness's 400 ms: on a loaded machine a live server would be declared DEAD, and a
    // replicated table's copy there dropped (KvCliTest.createWithReplicasAndScanStatsOfALostShard).
    config.put(FerriteConfig.DEAD_TIMEOUT, "10s");
    config.putAll(config());
    cluster =
        new ClusterHarness(
            dir.resolve("data"), new Credentials(id, Secrets.readOrCreate(secret)), true, config);
    cluster.startMaster();
    cluster.startServer("s1");
    String address = cluster.masterAddress();
    clusterFile = dir.resolve("cluster");
    new ClusterFile(
            "ferrite://127.0.0.1:" + address.substring(address.lastIndexOf(':') + 1), id, secret)
        .write(clusterFile);
  }

  /**
   * Runs {@code ferrite <face> <command> --cluster-file <this cluster's> <the rest of args>} and
   * returns its exit code; {@link #out} and {@link #err} hold what this run printed, only.
   */
  @Override
  protected int run(String... args) {
    out.getBuffer().setLength(0);
    err.getBuffer().setLength(0);
    List<String> all = new ArrayList<>(List.of(args));
    all.add(2, "--cluster-file");
    all.add(3, clusterFile.toString());
    return super.run(all.toArray(new String[0]));
  }
}
