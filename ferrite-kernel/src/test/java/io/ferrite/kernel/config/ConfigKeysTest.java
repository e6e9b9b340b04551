package io.ferrite.kernel.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.netty.NettyFabric;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The kernel's keys, the fabric switches they make, and face keys: unknown here, where no face is
 * on the class path (the kv and nodes modules test that theirs are known there).
 */
class ConfigKeysTest {
  @Test
  void everyKeyHasADefaultThatBuildsAndAOneLineDescription() {
    FerriteConfig d = FerriteConfig.defaults();
    for (Map.Entry<String, String[]> e : FerriteConfig.KEYS.entrySet()) {
      String[] v = e.getValue();
      assertEquals(2, v.length, e.getKey());
      assertEquals(v[0], d.get(e.getKey()), e.getKey());
      assertFalse(v[1].isBlank(), e.getKey() + " has no description");
      assertFalse(v[1].contains("\n"), e.getKey());
      assertTrue(v[1].length() <= 90, e.getKey() + ": description over 90 characters");
    }
  }

  @Test
  void fabricSwitchesDefaultToTheFabricsDefaults() {
    assertEquals(FabricTuning.DEFAULTS, FerriteConfig.defaults().fabricTuning());
  }

  @Test
  void fabricSwitchesReachTheStandardFabrics() {
    FerriteConfig c =
        FerriteConfig.builder()
            .set(FerriteConfig.NETTY_LANES, "0")
            .set(FerriteConfig.NETTY_LOOP_WRITES_ONLY, "true")
            .set(FerriteConfig.SHM_RINGS, "false")
            .set(FerriteConfig.SHM_WAITER_SPIN, "700")
            .set(FerriteConfig.SHM_POLLER_SPIN, "900")
            .set(FerriteConfig.TCP_POLL_SPIN, "1100")
            .build();
    FabricTuning want = new FabricTuning(0, false, false, 700, 900, 1100);
    assertEquals(want, c.fabricTuning());
    FabricFactory f = FabricFactory.standard(c);
    for (String name : new String[] {"tcp", "shm"}) {
      Fabric fabric = f.open(name);
      try {
        assertEquals(want, ((NettyFabric) fabric).tuning(), name);
      } finally {
        fabric.close();
      }
    }
  }

  @Test
  void fabricSwitchesAreChecked() {
    for (String[] bad :
        new String[][] {
          {FerriteConfig.NETTY_LANES, "-1", "expected: >= 0"},
          {FerriteConfig.SHM_RINGS, "maybe", "expected: true or false"},
          {FerriteConfig.SHM_POLLER_SPIN, "-5", "expected: >= 0"},
          {FerriteConfig.SHM_WAITER_SPIN, "soon", "expected: an integer"},
          {FerriteConfig.TCP_POLL_SPIN, "-1", "expected: >= 0"},
        }) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> FerriteConfig.builder().set(bad[0], bad[1]).build(),
              bad[0]);
      assertTrue(e.getMessage().startsWith(bad[0] + ": "), e.getMessage());
      assertTrue(e.getMessage().contains(bad[2]), e.getMessage());
    }
  }

  @Test
  void aFaceKeyIsUnknownWithoutItsFace() {
    for (String key : new String[] {"kv.log.compact", "nodes.lookup.lease"}) {
      assertFalse(FerriteConfig.KEYS.containsKey(key), key);
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> FerriteConfig.builder().set(key, "1"));
      assertTrue(e.getMessage().contains("unknown configuration key '" + key + "'"), key);
    }
    // The environment is not checked against the keys: an absent face's variable is ignored.
    assertEquals(
        FerriteConfig.defaults().effective(),
        FerriteConfig.load(null, Map.of("FERRITE_KV_LOG_COMPACT", "1m"), Map.of()).effective());
  }
}
