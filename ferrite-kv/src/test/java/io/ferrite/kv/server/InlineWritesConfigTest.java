package io.ferrite.kv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.kv.KvCluster;
import io.ferrite.kv.KvConfig;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kv.inline.writes} of a server's configuration reaches its kv service's write path. */
class InlineWritesConfigTest {
  @TempDir Path dir;

  private final List<KvService> started = new CopyOnWriteArrayList<>();

  @AfterEach
  void unhook() {
    KvService.testStarted = null;
  }

  private boolean inlineWith(Map<String, String> cfg, Path d) throws Exception {
    started.clear();
    KvService.testStarted = started::add;
    try (KvCluster cluster = new KvCluster(d, 1, false, cfg)) {
      assertEquals(1, cluster.servers.size());
      assertEquals(1, started.size());
      return started.get(0).inlineWrites();
    }
  }

  @Test
  void onByDefaultOffWhenConfigured() throws Exception {
    assertEquals(true, inlineWith(Map.of(), dir.resolve("a")));
    assertEquals(false, inlineWith(Map.of(KvConfig.INLINE_WRITES, "false"), dir.resolve("b")));
  }
}
