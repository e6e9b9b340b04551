package io.ferrite.apps.worker;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.memory.master.MemoryMaster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A cluster in this process for a sort that brings its own: a master with the memory face (tcp on
 * 127.0.0.1, reachable by worker processes) and memory servers serving tcp and shm, their dram in a
 * temporary directory under {@code /dev/shm} with the journal and a fresh secret file (mode 0600)
 * that the workers read. 4 MiB blocks and chunks; servers are declared DEAD only after 15 s of
 * silence, so a machine saturated by the sort does not lose a server. {@link #close} stops
 * everything and deletes the directory; it is idempotent and safe from a shutdown hook.
 */
public final class LocalCluster implements AutoCloseable {
  static final long REGION = 64L << 20;
  static final String BLOCK = "4m";

  private final Path dir;
  private final InProcessCluster cluster;
  private final ClusterAccess access;
  private boolean closed;

  private LocalCluster(Path dir, InProcessCluster cluster, ClusterAccess access) {
    this.dir = dir;
    this.cluster = cluster;
    this.access = access;
  }

  /**
   * Starts a master and {@code servers} memory servers with {@code bytesPerServer} of dram each
   * (rounded up to 64 MiB regions); clients of {@link #access()} use {@code fabric}.
   */
  public static LocalCluster start(int servers, long bytesPerServer, String fabric) {
    if (servers < 1 || servers > 16) {
      throw new IllegalArgumentException("servers: " + servers + " (expected: 1 to 16)");
    }
    Path base = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of("/tmp");
    Path dir;
    try {
      // Short names: the shm fabric binds a unix socket under the directory (108-byte limit).
      dir = Files.createTempDirectory(base, "frs");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a directory for the local cluster", e);
    }
    String clusterId = "rs" + ProcessHandle.current().pid();
    Path secret = dir.resolve("secret");
    Credentials credentials = new Credentials(clusterId, Secrets.readOrCreate(secret));
    long perServer = (bytesPerServer + REGION - 1) / REGION * REGION;
    FerriteConfig cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, clusterId)
            .set(FerriteConfig.DATA_DIR, dir.resolve("d").toString())
            .set(FerriteConfig.SHM_DIR, dir.resolve("s").toString())
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.REGION_SIZE, Long.toString(REGION))
            .set(FerriteConfig.BLOCK_SIZE, BLOCK)
            .set(FerriteConfig.CAPACITY_DRAM, Long.toString(perServer))
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.DEAD_TIMEOUT, "15s")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    InProcessCluster cluster;
    try {
      // The master serves tcp only: worker processes reach it there.
      cluster =
          InProcessCluster.builder(cfg, credentials)
              .fabrics(FabricFactory.standard(), List.of("tcp", "shm"))
              .masterFabrics(List.of("tcp"))
              .extensions(List.of(new MemoryMaster(Integer.MAX_VALUE)))
              .servers(servers)
              .serverNames(i -> "m" + (i - 1))
              .start();
    } catch (RuntimeException e) {
      deleteTree(dir);
      throw e;
    }
    return new LocalCluster(
        dir, cluster, new ClusterAccess(cluster.masterAddress(), clusterId, secret, fabric));
  }

  /** How clients (this process's and the workers') reach it. */
  public ClusterAccess access() {
    return access;
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    cluster.close();
    deleteTree(dir);
  }

  private static void deleteTree(Path dir) {
    try {
      FileTrees.delete(dir);
    } catch (IOException e) {
      // Best effort: a temporary directory.
    }
  }
}
