package io.ferrite.tree;

import io.ferrite.kernel.config.ConfigKeys;
import io.ferrite.kernel.config.FerriteConfig;
import java.util.List;

/**
 * The tree face's configuration keys, known to {@link FerriteConfig} through {@link ConfigKeys}
 * (META-INF/services) when the face is on the class path; read by the memory server's tree service.
 */
public final class TreeConfig implements ConfigKeys {
  /** Server: the size of one meganode region (Cell: 64 MiB). */
  public static final String MEGANODE_SIZE = "tree.meganode.size";

  /** Server: the size of one small node inside a meganode (Cell: 1 KiB). */
  public static final String NODE_SIZE = "tree.node.size";

  /** Server: the size of one key-value extent region of a tree. */
  public static final String EXTENT_REGION_SIZE = "tree.extent.region.size";

  /** Server: how many extent regions one tree's meganode may use. */
  public static final String EXTENT_REGIONS = "tree.extent.regions";

  /** For {@link java.util.ServiceLoader}. */
  public TreeConfig() {}

  @Override
  public List<Key> keys() {
    return List.of(
        new Key(MEGANODE_SIZE, "64m", "server: bytes of one meganode region (Cell: 64 MiB)"),
        new Key(NODE_SIZE, "1k", "server: bytes of one small node in a meganode (Cell: 1 KiB)"),
        new Key(EXTENT_REGION_SIZE, "16m", "server: bytes of one key-value extent region"),
        new Key(EXTENT_REGIONS, "16", "server: extent regions one meganode's pairs may use"));
  }

  @Override
  public void validate(FerriteConfig cfg) {
    long node = cfg.getSize(NODE_SIZE);
    if (node < 128 || node > 65536 || node % 8 != 0) {
      throw new IllegalArgumentException(
          NODE_SIZE + ": " + node + " (expected: a multiple of 8, 128 to 65536)");
    }
    long mega = cfg.getSize(MEGANODE_SIZE);
    if (mega < 3 * node || mega > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new IllegalArgumentException(
          MEGANODE_SIZE + ": " + mega + " (expected: 3 nodes to 1 GiB)");
    }
    long extent = cfg.getSize(EXTENT_REGION_SIZE);
    if (extent < 4096 || extent > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new IllegalArgumentException(
          EXTENT_REGION_SIZE + ": " + extent + " (expected: 4 KiB to 1 GiB)");
    }
    int regions = cfg.getInt(EXTENT_REGIONS);
    if (regions < 1 || regions > 4096) {
      throw new IllegalArgumentException(
          EXTENT_REGIONS + ": " + regions + " (expected: 1 to 4096)");
    }
  }
}
