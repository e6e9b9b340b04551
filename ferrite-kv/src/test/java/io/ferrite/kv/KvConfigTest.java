package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.config.FerriteConfig;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kv face's keys are known when it is on the class path, checked, and reach the face. */
class KvConfigTest {
  @TempDir Path dir;

  @Test
  void theFaceKeysAreKnownWithTheirDefaults() {
    FerriteConfig d = FerriteConfig.defaults();
    assertEquals("64m", FerriteConfig.KEYS.get(KvConfig.LOG_COMPACT)[0]);
    assertEquals(64L << 20, KvConfig.logCompactBytes(d));
    assertEquals(ExtentHints.DEFAULT_CAPACITY, KvConfig.extentHints(d));
    assertTrue(KvConfig.inlineWrites(d));
    FerriteConfig c = FerriteConfig.builder().set(KvConfig.LOG_COMPACT, "16k").build();
    assertEquals(16 << 10, KvConfig.logCompactBytes(c));
    assertEquals(
        "0",
        FerriteConfig.load(null, Map.of("FERRITE_KV_EXTENT_HINTS", "0"), Map.of())
            .get(KvConfig.EXTENT_HINTS),
        "the environment reaches a face key");
  }

  @Test
  void badValuesAreRefusedWhenTheConfigurationIsBuilt() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set(KvConfig.LOG_COMPACT, "1k").build());
    assertTrue(
        e.getMessage().startsWith("kv.log.compact: 1024 (expected: >= 4096)"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set(KvConfig.EXTENT_HINTS, "-1").build());
    assertTrue(e.getMessage().startsWith("kv.extent.hints: -1"), e.getMessage());
  }

  @Test
  void extentHintsOfTheClientsConfigurationReachItsTables() throws Exception {
    try (KvCluster cluster = new KvCluster(dir, 1)) {
      KvTable on =
          new KvClient(cluster.client())
              .createTable("on", ExtentHintsTest.options(TableOptions.Layout.HOPSCOTCH));
      assertTrue(on.extentHints().capacity() > 0);
      FerriteConfig off = cluster.config.with(KvConfig.EXTENT_HINTS, "0");
      KvTable t =
          new KvClient(
                  cluster.client(
                      ClientOptions.builder(cluster.credentials.as(Role.CLIENT)).config(off)))
              .createTable("off", ExtentHintsTest.options(TableOptions.Layout.HOPSCOTCH));
      assertEquals(0, t.extentHints().capacity());
      t.put(new byte[] {1}, new byte[] {2});
      assertEquals(2, t.get(new byte[] {1})[0]);
    }
  }
}
