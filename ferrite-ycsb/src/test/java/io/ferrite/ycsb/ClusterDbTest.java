package io.ferrite.ycsb;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ByteIterator;
import site.ycsb.StringByteIterator;

/**
 * What the binding's tests against a cluster share: a master and a memory server {@code s1} (tcp +
 * shm) in this JVM, started before each test and closed after it (also when it fails), and the
 * binding's properties that reach it ({@code ferrite.cluster}, {@code ferrite.secret.file}, {@code
 * ferrite.cluster.id}) in {@link #props}; a test adds the rest.
 */
abstract class ClusterDbTest {
  @TempDir Path dir;
  @AutoClose ClusterHarness cluster;
  final Properties props = new Properties();
  private final String clusterIdPrefix;

  /** {@code clusterIdPrefix}: the cluster id before this JVM's pid (it names the shm files). */
  ClusterDbTest(String clusterIdPrefix) {
    this.clusterIdPrefix = clusterIdPrefix;
  }

  /** The test's configuration keys, over (and beside) {@code capacity.disk=0}. */
  abstract Map<String, String> config();

  @BeforeEach
  void startCluster() throws IOException {
    Path secret = dir.resolve("secret");
    String id = clusterIdPrefix + ProcessHandle.current().pid();
    Map<String, String> config = new HashMap<>();
    config.put(FerriteConfig.CAPACITY_DISK, "0");
    config.putAll(config());
    cluster =
        new ClusterHarness(
            dir.resolve("data"), new Credentials(id, Secrets.readOrCreate(secret)), true, config);
    cluster.startMaster();
    cluster.startServer("s1");
    String address = cluster.masterAddress();
    props.setProperty(
        "ferrite.cluster",
        "ferrite://127.0.0.1:" + address.substring(address.lastIndexOf(':') + 1));
    props.setProperty("ferrite.secret.file", secret.toString());
    props.setProperty("ferrite.cluster.id", id);
  }

  /** A record of text fields: name, value, name, value, ... */
  static Map<String, ByteIterator> fields(String... kv) {
    Map<String, ByteIterator> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], new StringByteIterator(kv[i + 1]));
    }
    return m;
  }

  /** Field {@code f} of a record read back, as UTF-8 text. */
  static String text(Map<String, ByteIterator> m, String f) {
    return new String(m.get(f).toArray(), StandardCharsets.UTF_8);
  }
}
