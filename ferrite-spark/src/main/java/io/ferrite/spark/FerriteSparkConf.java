package io.ferrite.spark;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.config.ClusterLocator;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.spark.SparkConf;

/**
 * The {@code spark.ferrite.*} keys, read once from the {@link SparkConf}. The cluster is found as
 * every client finds it ({@link ClusterLocator}): the key, then the environment variables the CLI
 * reads, then the cluster file {@code ferrite local} writes ({@code ~/.ferrite/cluster}); the
 * secret likewise, preferring the {@code client.secret} beside a configured root secret (a shuffle
 * is a data client: role CLIENT is all it needs); TLS on tcp when a trust is given ({@code
 * spark.ferrite.tls.trust}, {@code FERRITE_TLS_TRUST} or the cluster file's).
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
  static final String TLS_TRUST = PREFIX + "tls.trust";
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
    ClusterLocator.Location l =
        ClusterLocator.locate(
            new ClusterLocator.Given(
                ClusterLocator.first(conf.get(CLUSTER, null)),
                ClusterLocator.first(conf.get(CLUSTER_ID, null)),
                path(conf, SECRET_FILE),
                path(conf, CLUSTER_FILE),
                path(conf, TLS_TRUST),
                CLUSTER,
                SECRET_FILE,
                CLUSTER_FILE),
            env);
    Credentials credentials = l.credentials(Role.CLIENT);
    FabricFactory fabrics;
    try {
      fabrics = l.fabrics(FerriteConfig.load(null, env, Map.of()));
    } catch (FerriteException e) {
      throw new IllegalArgumentException(e.getMessage(), e); // a trust file that cannot be read
    }
    ClientOptions options =
        ClientOptions.builder(credentials)
            .fabric(conf.get(FABRIC, "auto").trim())
            .fabrics(fabrics)
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
        l.master(),
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

  /** The path a key names, or null when it is unset or blank. */
  private static Path path(SparkConf conf, String key) {
    String v = ClusterLocator.first(conf.get(key, null));
    return v == null ? null : Path.of(v);
  }
}
