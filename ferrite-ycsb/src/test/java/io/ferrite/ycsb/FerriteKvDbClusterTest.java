package io.ferrite.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.TableOptions;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.Status;

/** The binding's operations against a master and a memory server (tcp + shm) in this JVM. */
class FerriteKvDbClusterTest extends ClusterDbTest {
  FerriteKvDbClusterTest() {
    super("ycsb");
  }

  @Override
  Map<String, String> config() {
    return Map.of(
        FerriteConfig.REGION_SIZE, "64m",
        FerriteConfig.BLOCK_SIZE, "1m",
        // kv shard regions count against it: 8 shards with 16 MiB extent regions
        FerriteConfig.CAPACITY_DRAM, "256m");
  }

  @BeforeEach
  void binding() {
    props.setProperty("ferrite.shards", "2");
    props.setProperty("ferrite.slots", "1024");
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
