package io.ferrite.spark;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.spark.SparkConf;

/**
 * The {@code spark.ferrite.*} keys, read once from the {@link SparkConf}. How the cluster is found
 * follows ferrite-hadoop's {@code FerriteFsConfig} (and the CLI's {@code --cluster}): the key, then
 * the environment variables the CLI reads, then the cluster file {@code ferrite local} writes
 * ({@code ~/.ferrite/cluster}); the secret likewise, preferring the {@code client.secret} beside a
 * cluster file's root secret (a shuffle is a data client: role CLIENT is all it needs).
 *
 * @param master the master, {@code ferrite://host:port} (several groups: see docs/RESILIENCE.md)
 * @param options credentials, fabric and timeouts
 * @param root the directory under which each application gets {@code <appId>/}
 * @param storageClass the storage class of map output Files ("" for the cluster's order)
 * @param prefetch map outputs a reducer keeps in flight
 * @param deleteOnUnregister whether the driver deletes a shuffle's Files when Spark unregisters it
 */
record FerriteSparkConf(
    String master,
    ClientOptions options,
    String root,
    String storageClass,
    int prefetch,
    boolean deleteOnUnregister) {

  static final String PREFIX = "spark.ferrite.";
  static final String CLUSTER = PREFIX + "cluster";
  static final String CLUSTER_FILE = PREFIX + "cluster.file";
  static final String CLUSTER_ID = PREFIX + "cluster.id";
  static final String SECRET_FILE = PREFIX + "secret.file";
  static final String FABRIC = PREFIX + "fabric";
  static final String RPC_TIMEOUT = PREFIX + "rpc.timeout";
  static final String ROOT = PREFIX + "shuffle.root";
  static final String STORAGE_CLASS = PREFIX + "shuffle.storageClass";
  static final String PREFETCH = PREFIX + "shuffle.prefetch";
  static final String DELETE_ON_UNREGISTER = PREFIX + "shuffle.deleteOnUnregister";

  static final int DEFAULT_PREFETCH = 4;

  /**
   * Reads the keys; {@code env} stands for the process environment (tests pass their own).
   *
   * @throws IllegalArgumentException naming the key when a value is malformed or no cluster or
   *     secret can be found
   */
  static FerriteSparkConf from(SparkConf conf, Map<String, String> env) {
    Path cfPath =
        conf.contains(CLUSTER_FILE)
            ? Path.of(conf.get(CLUSTER_FILE).trim())
            : ClusterFile.defaultLocation();
    ClusterFile cf = Files.exists(cfPath) ? ClusterFile.read(cfPath) : null;
    String master = first(conf.get(CLUSTER, null), env.get("FERRITE_CLUSTER"));
    if (master == null && cf != null) {
      master = cf.uri();
    }
    if (master == null) {
      throw new IllegalArgumentException(
          "no Ferrite cluster: set "
              + CLUSTER
              + " (ferrite://host:port), FERRITE_CLUSTER, or give a cluster file as 'ferrite local'"
              + " writes ("
              + CLUSTER_FILE
              + "; none at "
              + cfPath
              + ")");
    }
    String id =
        first(conf.get(CLUSTER_ID, null), env.get(FerriteConfig.envName(FerriteConfig.CLUSTER_ID)));
    if (id == null) {
      id = cf == null ? "ferrite" : cf.clusterId();
    }
    String secret =
        first(
            conf.get(SECRET_FILE, null), env.get(FerriteConfig.envName(FerriteConfig.SECRET_FILE)));
    if (secret == null && cf != null) {
      Path rootSecret = cf.secretFile().toAbsolutePath();
      Path client = rootSecret.resolveSibling(Secrets.CLIENT_FILE);
      secret = (Files.isReadable(client) ? client : rootSecret).toString();
    }
    if (secret == null) {
      throw new IllegalArgumentException(
          "no Ferrite cluster secret: set "
              + SECRET_FILE
              + ", "
              + FerriteConfig.envName(FerriteConfig.SECRET_FILE)
              + ", or give a cluster file ("
              + CLUSTER_FILE
              + ")");
    }
    Credentials credentials = Secrets.load(id, Path.of(secret));
    ClientOptions options =
        ClientOptions.builder(credentials)
            .fabric(conf.get(FABRIC, "auto").trim())
            .clientName("spark")
            .rpcTimeout(Duration.ofMillis(conf.getTimeAsMs(RPC_TIMEOUT, "5s")))
            .build();
    String root = conf.get(ROOT, "/spark").trim();
    int prefetch = conf.getInt(PREFETCH, DEFAULT_PREFETCH);
    if (prefetch < 1 || prefetch > 64) {
      throw new IllegalArgumentException(
          PREFETCH + ": " + prefetch + " (expected: 1 to 64 map outputs in flight)");
    }
    return new FerriteSparkConf(
        master,
        options,
        root,
        conf.get(STORAGE_CLASS, "").trim(),
        prefetch,
        conf.getBoolean(DELETE_ON_UNREGISTER, true));
  }

  /** The nodes-face directory of an application's shuffles. */
  String appDir(String appId) {
    return ("/".equals(root) ? "" : root) + "/" + appId;
  }

  private static String first(String... values) {
    for (String v : values) {
      if (v != null && !v.isBlank()) {
        return v.trim();
      }
    }
    return null;
  }
}
