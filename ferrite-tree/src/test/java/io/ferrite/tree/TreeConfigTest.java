package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import org.junit.jupiter.api.Test;

/** The tree face's keys are known when it is on the class path, with defaults, and checked. */
class TreeConfigTest {
  @Test
  void theFaceKeysAreKnownWithTheirDefaults() {
    FerriteConfig d = FerriteConfig.defaults();
    assertEquals(64L << 20, d.getSize(TreeConfig.MEGANODE_SIZE));
    assertEquals(1024, d.getSize(TreeConfig.NODE_SIZE));
    assertEquals(16L << 20, d.getSize(TreeConfig.EXTENT_REGION_SIZE));
    assertEquals(16, d.getInt(TreeConfig.EXTENT_REGIONS));
    assertEquals(128L << 20, d.getSize(TreeConfig.CACHE_BYTES));
    assertEquals(TreeConfig.Placement.SPREAD, TreeConfig.placement(d));
    assertEquals(PathSelector.Settings.defaults(), TreeConfig.selector(d));
    assertEquals(
        1,
        TreeConfig.selector(FerriteConfig.builder().set(TreeConfig.SELECTOR_BURST, "1").build())
            .burst());
  }

  @Test
  void badValuesAreRefusedWhenTheConfigurationIsBuilt() {
    assertRefused(TreeConfig.NODE_SIZE, "100", "tree.node.size: 100 (expected: a multiple of 8");
    assertRefused(TreeConfig.NODE_SIZE, "1001", "tree.node.size: 1001");
    assertRefused(TreeConfig.MEGANODE_SIZE, "2k", "tree.meganode.size: 2048 (expected: 3 nodes");
    assertRefused(TreeConfig.EXTENT_REGION_SIZE, "1k", "tree.extent.region.size: 1024");
    assertRefused(TreeConfig.EXTENT_REGIONS, "0", "tree.extent.regions: 0 (expected: 1 to 4096)");
    assertRefused(
        TreeConfig.SELECTOR_OUTLIER, "x", "tree.selector.outlier: x (expected: a number)");
    assertRefused(TreeConfig.SELECTOR_OUTLIER, "1", "tree.selector: outlierK: 1.0 (expected: > 1)");
    assertRefused(TreeConfig.SELECTOR_EXPLORE, "0.7", "tree.selector: explore: 0.7");
    assertRefused(TreeConfig.SELECTOR_SAMPLES, "1", "tree.selector: samples: 1");
    assertRefused(TreeConfig.SELECTOR_SAMPLING, "0", "tree.selector: sampling: 0");
    assertRefused(
        TreeConfig.PLACEMENT,
        "everywhere",
        "tree.placement: everywhere (expected: local or spread)");
    assertRefused(TreeConfig.SELECTOR_BURST, "0", "tree.selector: burst: 0 (expected: 1 to 64)");
  }

  static void assertRefused(String key, String value, String says) {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> FerriteConfig.builder().set(key, value).build());
    assertTrue(e.getMessage().startsWith(says), e.getMessage() + " should start with " + says);
  }
}
