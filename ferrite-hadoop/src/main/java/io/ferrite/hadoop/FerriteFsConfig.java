package io.ferrite.hadoop;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;

/**
 * How a {@link FerriteFileSystem} finds its cluster and authenticates: Hadoop configuration keys
 * first, then the environment variables the {@code ferrite} CLI reads, then the cluster file that
 * {@code ferrite local} writes ({@code ~/.ferrite/cluster}). The same order as the CLI's {@code
 * --cluster}/{@code --secret-file} flags, so a URI that works with {@code ferrite fs} works here.
 *
 * <table>
 *   <caption>keys</caption>
 *   <tr><th>key</th><th>default</th></tr>
 *   <tr><td>{@value #SECRET}</td><td>the cluster secret in hex; read with {@code
 *       Configuration.getPassword}, so a Hadoop credential provider may hold it</td></tr>
 *   <tr><td>{@value #SECRET_FILE}</td><td>{@code $FERRITE_CLUSTER_SECRET_FILE}, then the cluster
 *       file's</td></tr>
 *   <tr><td>{@value #CLUSTER_ID}</td><td>{@code $FERRITE_CLUSTER_ID}, then the cluster file's,
 *       then {@code ferrite}</td></tr>
 *   <tr><td>{@value #CLUSTER_FILE}</td><td>{@code ~/.ferrite/cluster}</td></tr>
 *   <tr><td>{@value #FABRIC}</td><td>{@code auto}: shm to servers on this host, else tcp</td></tr>
 *   <tr><td>{@value #RPC_TIMEOUT}</td><td>{@code 5s}</td></tr>
 *   <tr><td>{@value #REPLICATION}</td><td>{@value #DFS_REPLICATION}, then 1: a File's copies
 *       when the caller asks for the default</td></tr>
 * </table>
 *
 * <p>A URI without a host ({@code ferrite:///path}) means the cluster of {@code $FERRITE_CLUSTER},
 * then of the cluster file; without a port, the master's default port {@value #DEFAULT_PORT}.
 */
final class FerriteFsConfig {
  static final String PREFIX = "fs.ferrite.";
  static final String SECRET = PREFIX + "secret";
  static final String SECRET_FILE = PREFIX + "secret.file";
  static final String CLUSTER_ID = PREFIX + "cluster.id";
  static final String CLUSTER_FILE = PREFIX + "cluster.file";
  static final String FABRIC = PREFIX + "fabric";
  static final String RPC_TIMEOUT = PREFIX + "rpc.timeout";

  /**
   * Copies of each block of a File made through Hadoop when the caller asks for the default: this
   * key, else HDFS's {@value #DFS_REPLICATION}, else 1. 1 to 3 (more is clamped at create, as a
   * create's own argument is: see {@link FerriteFileSystem}).
   */
  static final String REPLICATION = PREFIX + "replication";

  /** HDFS's default replication key, honoured when {@link #REPLICATION} is not set. */
  static final String DFS_REPLICATION = "dfs.replication";

  /** The master's tcp port when a URI names none ({@link FerriteConfig#MASTER_PORT}'s default). */
  static final int DEFAULT_PORT =
      Integer.parseInt(FerriteConfig.KEYS.get(FerriteConfig.MASTER_PORT)[0]);

  private FerriteFsConfig() {}

  /**
   * Where and how to connect.
   *
   * @param master the master, {@code ferrite://host:port}
   * @param options credentials, fabric and timeouts
   */
  record Target(String master, ClientOptions options) {}

  static Target resolve(URI uri, Configuration conf, Map<String, String> env) throws IOException {
    ClusterFileCache cf = new ClusterFileCache(conf);
    String master;
    if (uri.getHost() != null) {
      master =
          "ferrite://" + uri.getHost() + ":" + (uri.getPort() < 0 ? DEFAULT_PORT : uri.getPort());
    } else {
      master = first(env.get("FERRITE_CLUSTER"));
      if (master == null && cf.get() != null) {
        master = cf.get().uri();
      }
      if (master == null) {
        throw new IOException(
            uri
                + " names no cluster: use ferrite://host:port/path, set FERRITE_CLUSTER, or give a"
                + " cluster file as 'ferrite local' writes ("
                + CLUSTER_FILE
                + "; none at "
                + cf.path
                + ")");
      }
    }
    String id =
        first(
            conf.getTrimmed(CLUSTER_ID), env.get(FerriteConfig.envName(FerriteConfig.CLUSTER_ID)));
    if (id == null) {
      id = cf.get() == null ? "ferrite" : cf.get().clusterId();
    }
    Credentials credentials = credentials(id, conf, env, cf);
    Duration rpc =
        Duration.ofMillis(conf.getTimeDuration(RPC_TIMEOUT, 5000, TimeUnit.MILLISECONDS));
    try {
      ClientOptions options =
          ClientOptions.builder(credentials)
              .fabric(conf.getTrimmed(FABRIC, "auto"))
              .clientName("hadoop")
              .rpcTimeout(rpc)
              .build();
      return new Target(master, options);
    } catch (IllegalArgumentException e) {
      throw new IOException(FABRIC + ": " + e.getMessage(), e);
    }
  }

  /**
   * The secret to prove: {@link #SECRET} (the root's hex), else the file {@link #SECRET_FILE} names
   * (the root or a {@code client.secret}: docs/SECURITY.md), else the cluster file's, where the
   * {@code client.secret} beside the root is preferred (a file system is a data client: role CLIENT
   * is all it needs).
   */
  private static Credentials credentials(
      String id, Configuration conf, Map<String, String> env, ClusterFileCache cf)
      throws IOException {
    char[] hex = conf.getPassword(SECRET);
    if (hex != null && hex.length > 0) {
      try {
        return new Credentials(id, HexFormat.of().parseHex(new String(hex).trim()));
      } catch (IllegalArgumentException e) {
        throw new IOException(SECRET + " does not hold hex", e);
      }
    }
    String file =
        first(
            conf.getTrimmed(SECRET_FILE),
            env.get(FerriteConfig.envName(FerriteConfig.SECRET_FILE)));
    if (file == null && cf.get() != null) {
      Path root = cf.get().secretFile().toAbsolutePath();
      Path client = root.resolveSibling(Secrets.CLIENT_FILE);
      file = (java.nio.file.Files.isReadable(client) ? client : root).toString();
    }
    if (file == null) {
      throw new IOException(
          "no cluster secret: set "
              + SECRET_FILE
              + " (or "
              + SECRET
              + "), "
              + FerriteConfig.envName(FerriteConfig.SECRET_FILE)
              + ", or give a cluster file as 'ferrite local' writes ("
              + CLUSTER_FILE
              + "; none at "
              + cf.path
              + ")");
    }
    try {
      return Secrets.load(id, Path.of(file));
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  /**
   * The default replication: {@link #REPLICATION}, else {@link #DFS_REPLICATION}, else 1; at least
   * 1 (an IOException naming the key otherwise), at most what a File can have ({@link
   * io.ferrite.nodes.NodesProtocol#MAX_REPLICAS}: larger values, such as a cluster-wide HDFS
   * setting of 10, are clamped to it).
   */
  static short replication(Configuration conf) throws IOException {
    String key = REPLICATION;
    String v = conf.getTrimmed(REPLICATION);
    if (v == null || v.isEmpty()) {
      key = DFS_REPLICATION;
      v = conf.getTrimmed(DFS_REPLICATION);
    }
    if (v == null || v.isEmpty()) {
      return 1;
    }
    int n;
    try {
      n = Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IOException(key + ": " + v + " (expected: a number of copies, 1 to 3)", e);
    }
    if (n < 1) {
      throw new IOException(key + ": " + n + " (expected: a number of copies, 1 to 3)");
    }
    return (short) Math.min(n, io.ferrite.nodes.NodesProtocol.MAX_REPLICAS);
  }

  private static String first(String... values) {
    for (String v : values) {
      if (v != null && !v.isBlank()) {
        return v.trim();
      }
    }
    return null;
  }

  /** The cluster file, read at most once and only when a value falls through to it. */
  private static final class ClusterFileCache {
    final Path path;
    private ClusterFile file;
    private boolean read;

    ClusterFileCache(Configuration conf) {
      String p = conf.getTrimmed(CLUSTER_FILE);
      this.path = p == null || p.isEmpty() ? ClusterFile.defaultLocation() : Path.of(p);
    }

    ClusterFile get() throws IOException {
      if (!read) {
        read = true;
        if (Files.exists(path)) {
          try {
            file = ClusterFile.read(path);
          } catch (IllegalArgumentException e) {
            throw new IOException(e.getMessage(), e);
          }
        }
      }
      return file;
    }
  }
}
