package io.ferrite.tree.server;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.extent.ExtentAllocator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regions for the meganode tests (files in a temporary directory, each its own id and rkey), closed
 * and deleted after each test, and the extent allocator a meganode stores its values with.
 */
abstract class MeganodeFixture {
  @TempDir Path dir;
  private final List<MappedRegion> regions = new ArrayList<>();
  private int ids;

  @AfterEach
  void closeRegions() {
    regions.forEach(MappedRegion::closeAndDelete);
    regions.clear();
  }

  MappedRegion region(long length) {
    MappedRegion r = MappedRegion.create(dir.resolve("r" + ids), ++ids, length, 42L + ids);
    regions.add(r);
    return r;
  }

  /** Extents in 1 MiB regions, at most {@code maxRegions} of them. */
  ExtentAllocator extents(int maxRegions) {
    return new ExtentAllocator(region(1 << 20), maxRegions, () -> region(1 << 20));
  }
}
