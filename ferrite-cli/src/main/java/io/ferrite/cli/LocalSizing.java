package io.ferrite.cli;

import io.ferrite.kernel.proto.Sizes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * How big {@code ferrite local} makes its memory servers when {@code --dram} / {@code --disk} are
 * not given: from the machine, so that a first demo fits.
 *
 * <p>DRAM: a quarter of physical memory (or of the cgroup's limit, if lower), shared by the
 * servers, within three quarters of what the shm directory ({@code /dev/shm}) has free (a server
 * preallocates its whole dram capacity there as tmpfs files at start, so more would fail or starve
 * the machine), rounded down to the region size, at least one region. Disk: a quarter of the dram
 * (at least a region), within an eighth of the data directory's free space: disk regions are
 * preallocated too, on a real disk, and the tier is for demos of spilling, not for bulk.
 *
 * <p>Cost: every region is a file given its space at start ({@code FileSpace}: one {@code
 * fallocate(1)} per region of 32 MiB or more), so start time grows with the region count: on a
 * loaded 2-core, 24 GiB machine {@code ferrite local --exit-after-check} took 3.2-6.1 s with the
 * old 256 MiB / 128 MiB and about 1-2.5 s more with 2 x 2.9 GiB (figures in the report of #17).
 */
final class LocalSizing {
  private LocalSizing() {}

  /**
   * What the machine has: physical memory (0 when unknown), free bytes in the shm directory and in
   * the data directory (Long.MAX_VALUE when unknown).
   */
  record Machine(long memory, long shmFree, long diskFree) {
    /** Reads the machine: /proc/meminfo, the cgroup limit, the two directories' file stores. */
    static Machine probe(Path shmDir, Path dataDir) {
      return new Machine(physicalMemory(), usable(shmDir), usable(dataDir));
    }
  }

  /** The choice, per server, and why, in one line for the banner. */
  record Choice(long dram, long disk, String why) {}

  /**
   * The sizes per server: {@code dramFlag} / {@code diskFlag} when given (--dram, --disk, or the
   * capacity keys set explicitly), else from {@code m}.
   */
  static Choice choose(Machine m, int servers, long regionSize, Long dramFlag, Long diskFlag) {
    int n = Math.max(1, servers);
    long dram;
    String why;
    if (dramFlag != null) {
      dram = dramFlag;
      why = "dram " + Sizes.format(dram) + " per server: given";
    } else if (m.memory() <= 0) {
      dram = 256L << 20;
      why = "dram " + Sizes.format(dram) + " per server: physical memory unknown";
    } else {
      long share = m.memory() / 4 / n;
      long shmCap = m.shmFree() == Long.MAX_VALUE ? Long.MAX_VALUE : m.shmFree() / 4 * 3 / n;
      dram = Math.max(regionSize, roundDown(Math.min(share, shmCap), regionSize));
      why =
          String.format(
              Locale.ROOT,
              "dram %s per server: 1/4 of %s RAM over %d server%s%s; shm has %s free",
              Sizes.format(dram),
              gib(m.memory()),
              n,
              n == 1 ? "" : "s",
              shmCap < share ? ", capped at 3/4 of the free shm" : "",
              m.shmFree() == Long.MAX_VALUE ? "?" : gib(m.shmFree()));
    }
    long disk;
    if (diskFlag != null) {
      disk = diskFlag;
      why += "; disk " + Sizes.format(disk) + ": given";
    } else {
      long cap = m.diskFree() == Long.MAX_VALUE ? Long.MAX_VALUE : m.diskFree() / 8 / n;
      long want = Math.max(regionSize, dram / 4);
      disk = roundDown(Math.min(want, cap), regionSize);
      why +=
          "; disk "
              + Sizes.format(disk)
              + (cap < want ? ": 1/8 of the data directory's free space" : ": 1/4 of the dram");
    }
    return new Choice(dram, disk, why);
  }

  private static long roundDown(long v, long unit) {
    return v / unit * unit;
  }

  private static String gib(long bytes) {
    return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
  }

  private static long usable(Path dir) {
    try {
      Path p = dir;
      while (p != null && !Files.exists(p)) {
        p = p.getParent();
      }
      return p == null ? Long.MAX_VALUE : Files.getFileStore(p).getUsableSpace();
    } catch (IOException e) {
      return Long.MAX_VALUE;
    }
  }

  /**
   * MemTotal of /proc/meminfo, lowered to the cgroup v2 (or v1) memory limit when one is set; 0
   * when neither can be read (not Linux). Read from /proc rather than through {@code
   * com.sun.management.OperatingSystemMXBean}, which forbidden-apis rejects as non-portable and
   * which does not see the cgroup limit on every JDK 17 build.
   */
  static long physicalMemory() {
    long total = 0;
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"), StandardCharsets.US_ASCII)) {
        if (line.startsWith("MemTotal:")) {
          total = Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      return 0;
    }
    for (String limit :
        new String[] {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
      try {
        String s = Files.readString(Path.of(limit), StandardCharsets.US_ASCII).trim();
        if (s.matches("[0-9]+")) {
          long l = Long.parseLong(s);
          if (l > 0 && l < total) {
            total = l;
          }
        }
      } catch (IOException | RuntimeException e) {
        // No such cgroup file: no limit from it.
      }
    }
    return total;
  }
}
