package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LocalSizingTest {
  static final long MIB = 1L << 20;
  static final long GIB = 1L << 30;
  static final long REGION = 64 * MIB;

  @Test
  void aQuarterOfMemoryOverTheServersRoundedDownToTheRegionSize() {
    long ram = 24_684_084L * 1024; // the 23.5 GiB of the machine
    var c = LocalSizing.choose(new LocalSizing.Machine(ram, ram, 80 * GIB), 2, REGION, null, null);
    // 23.5 GiB / 4 / 2 = 2.94 GiB, down to 64 MiB: 47 regions.
    assertEquals(47 * REGION, c.dram());
    assertEquals(11 * REGION, c.disk(), "disk a quarter of the dram, rounded down");
    assertTrue(
        c.why().startsWith("dram 2.9 GiB per server: 1/4 of 23.5 GiB RAM over 2 servers"), c.why());
    // The first demo: rsort --gen 256MiB on 2 workers takes about 3.2 x 256 MiB.
    assertTrue(2 * c.dram() > 3.2 * 256 * MIB);
  }

  @Test
  void theShmDirectoryAndTheDiskCapTheChoice() {
    var c =
        LocalSizing.choose(
            new LocalSizing.Machine(64 * GIB, 2 * GIB, 2 * GIB), 2, REGION, null, null);
    assertEquals(768 * MIB, c.dram(), "3/4 of 2 GiB of shm over 2 servers");
    assertEquals(128 * MIB, c.disk(), "1/8 of 2 GiB over 2 servers (under 1/4 of the dram)");
    assertTrue(c.why().contains("capped at 3/4 of the free shm"), c.why());
    assertTrue(c.why().contains("1/8 of the data directory's free space"), c.why());
  }

  @Test
  void atLeastOneRegionAndFlagsWin() {
    var tiny =
        LocalSizing.choose(new LocalSizing.Machine(GIB, 16 * MIB, GIB), 4, REGION, null, null);
    assertEquals(REGION, tiny.dram());
    var flags =
        LocalSizing.choose(
            new LocalSizing.Machine(64 * GIB, 64 * GIB, GIB), 2, REGION, 128 * MIB, 64 * MIB);
    assertEquals(128 * MIB, flags.dram());
    assertEquals(64 * MIB, flags.disk());
    assertEquals("dram 128 MiB per server: given; disk 64 MiB: given", flags.why());
    var unknown = LocalSizing.choose(new LocalSizing.Machine(0, GIB, GIB), 2, REGION, null, null);
    assertEquals(256 * MIB, unknown.dram());
  }

  @Test
  void thisMachineHasMemory() {
    // Linux only, like the shm fabric: /proc/meminfo is there.
    assertTrue(LocalSizing.physicalMemory() > 256 * MIB);
  }
}
