package io.ferrite.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.TableOptions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ByteIterator;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/** The binding's operations against a master and a memory server (tcp + shm) in this JVM. */
class FerriteKvDbClusterTest {
  @TempDir Path dir;
  ClusterHarness cluster;
  final Properties props = new Properties();

  @BeforeEach
  void start() throws IOException {
    Path secret = dir.resolve("secret");
    String id = "ycsb" + ProcessHandle.current().pid();
    cluster =
        new ClusterHarness(
            dir.resolve("data"),
            new Credentials(id, Secrets.readOrCreate(secret)),
            true,
            Map.of(
                FerriteConfig.REGION_SIZE, "64m",
                FerriteConfig.BLOCK_SIZE, "1m",
                // kv shard regions count against it: 8 shards with 16 MiB extent regions
                FerriteConfig.CAPACITY_DRAM, "256m",
                FerriteConfig.CAPACITY_DISK, "0"));
    cluster.startMaster();
    cluster.startServer("s1");
    String address = cluster.masterAddress();
    props.setProperty(
        "ferrite.cluster",
        "ferrite://127.0.0.1:" + address.substring(address.lastIndexOf(':') + 1));
    props.setProperty("ferrite.secret.file", secret.toString());
    props.setProperty("ferrite.cluster.id", id);
    props.setProperty("ferrite.shards", "2");
    props.setProperty("ferrite.slots", "1024");
  }

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static Map<String, ByteIterator> fields(String... kv) {
    Map<String, ByteIterator> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], new StringByteIterator(kv[i + 1]));
    }
    return m;
  }

  private static String text(Map<String, ByteIterator> m, String f) {
    return new String(m.get(f).toArray(), StandardCharsets.UTF_8);
  }

  @Test
  void insertReadUpdateDeleteAsYcsbCallsThem() throws Exception {
    for (String fabric : List.of("shm", "tcp")) {
      for (String layout : List.of("hopscotch", "pilaf")) {
        run(fabric, layout);
      }
    }
  }

  private void run(String fabric, String layout) throws Exception {
    {
      props.setProperty("ferrite.fabric", fabric);
      props.setProperty("ferrite.layout", layout);
      props.setProperty("ferrite.table", "usertable-" + fabric + "-" + layout);
      FerriteKvDb a = new FerriteKvDb();
      FerriteKvDb b = new FerriteKvDb();
      a.setProperties(props);
      b.setProperties(props);
      a.init();
      b.init();
      assertEquals(Status.OK, a.insert("t", "user1", fields("f0", "a", "f1", "b")));
      Map<String, ByteIterator> got = new HashMap<>();
      assertEquals(Status.OK, b.read("t", "user1", null, got));
      assertEquals("a", text(got, "f0"));
      assertEquals("b", text(got, "f1"));
      assertEquals(Status.OK, b.update("t", "user1", fields("f1", "B")));
      got.clear();
      assertEquals(Status.OK, a.read("t", "user1", Set.of("f1"), got));
      assertEquals(Set.of("f1"), got.keySet(), "only the fields asked for");
      assertEquals("B", text(got, "f1"));
      assertEquals(Status.NOT_FOUND, a.update("t", "nobody", fields("f0", "x")));
      assertEquals(Status.NOT_FOUND, a.read("t", "nobody", null, new HashMap<>()));
      assertEquals(Status.OK, a.delete("t", "user1"));
      assertEquals(Status.NOT_FOUND, a.delete("t", "user1"));
      assertEquals(Status.OK, a.insert("t", "big", fields("f0", "x".repeat(500))));
      got.clear();
      assertEquals(Status.OK, b.read("t", "big", null, got));
      assertEquals(500, text(got, "f0").length(), "a record larger than a slot, out of line");
      TableOptions.Layout created =
          new KvClient(cluster.client("tcp"))
              .table("usertable-" + fabric + "-" + layout)
              .info()
              .options()
              .layout();
      assertEquals(TableOptions.Layout.valueOf(layout.toUpperCase(Locale.ROOT)), created);
      a.cleanup();
      b.cleanup();
    }
  }
}
