package io.ferrite.hadoop;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.config.ClusterLocator;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;

/**
 * How a {@link FerriteFileSystem} finds its cluster and authenticates, as every client does ({@link
 * ClusterLocator}): Hadoop configuration keys first, then the environment variables the {@code
 * ferrite} CLI reads, then the cluster file that {@code ferrite local} writes ({@code
 * ~/.ferrite/cluster}). The same order as the CLI's {@code --cluster}/{@code --secret-file} flags,
 * so a URI that works with {@code ferrite fs} works here.
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
 *   <tr><td>{@value #TLS_TRUST}</td><td>{@code $FERRITE_TLS_TRUST}, then the cluster file's; none:
 *       no TLS</td></tr>
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
  static final String TLS_TRUST = PREFIX + "tls.trust";

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
    String master =
        uri.getHost() == null
            ? null
            : "ferrite://"
                + uri.getHost()
                + ":"
                + (uri.getPort() < 0 ? DEFAULT_PORT : uri.getPort());
    char[] hex = conf.getPassword(SECRET);
    boolean hexSecret = hex != null && hex.length > 0;
    ClusterLocator.Location l;
    try {
      l =
          ClusterLocator.locate(
              new ClusterLocator.Given(
                  master,
                  ClusterLocator.first(conf.getTrimmed(CLUSTER_ID)),
                  path(conf, SECRET_FILE),
                  path(conf, CLUSTER_FILE),
                  path(conf, TLS_TRUST),
                  "the URI's host (" + uri + " has none)",
                  SECRET_FILE + " (or " + SECRET + ")",
                  CLUSTER_FILE),
              env);
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage(), e);
    }
    Duration rpc =
        Duration.ofMillis(conf.getTimeDuration(RPC_TIMEOUT, 5000, TimeUnit.MILLISECONDS));
    FabricFactory fabrics;
    try {
      fabrics = l.fabrics(FerriteConfig.load(null, env, Map.of()));
    } catch (FerriteException e) {
      throw new IOException(e.getMessage(), e); // a trust file that cannot be read
    }
    try {
      ClientOptions options =
          ClientOptions.builder(hexSecret ? hexCredentials(l.clusterId(), hex) : credentials(l))
              .fabric(conf.getTrimmed(FABRIC, "auto"))
              .fabrics(fabrics)
              .clientName("hadoop")
              .rpcTimeout(rpc)
              .build();
      return new Target(l.master(), options);
    } catch (IllegalArgumentException e) {
      throw new IOException(FABRIC + ": " + e.getMessage(), e);
    }
  }

  private static Credentials hexCredentials(String id, char[] hex) throws IOException {
    try {
      return new Credentials(id, HexFormat.of().parseHex(new String(hex).trim()));
    } catch (IllegalArgumentException e) {
      throw new IOException(SECRET + " does not hold hex", e);
    }
  }

  /**
   * The secret of a file system, a data client (role CLIENT): the file {@link #SECRET_FILE} names
   * as it is (the root or a {@code client.secret}: docs/SECURITY.md), else the configured root's
   * {@code client.secret} when there is one.
   */
  private static Credentials credentials(ClusterLocator.Location l) throws IOException {
    try {
      return l.credentials(Role.CLIENT);
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  /** The path a key names, or null when it is unset or blank. */
  private static Path path(Configuration conf, String key) {
    String v = ClusterLocator.first(conf.getTrimmed(key));
    return v == null ? null : Path.of(v);
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
}
