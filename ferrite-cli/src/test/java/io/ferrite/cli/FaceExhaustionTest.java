package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.PrivateTmpfs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #15, "Exhaustion": a server filled through its faces (files, kv values, a kv table larger
 * than its capacity) on a small private tmpfs answers a typed NO_SPACE each time, neither it nor a
 * client mapping its files over shm dies, and every byte comes back after the deletes — in the
 * status and on the tmpfs itself. The cluster and its clients run in a child JVM whose /dev/shm is
 * a tmpfs of its own ({@link PrivateTmpfs}, {@link FaceExhaustionChild}); this JVM checks the lines
 * it prints.
 */
@Tag("multiprocess")
class FaceExhaustionTest {
  @TempDir Path dir;

  private static Matcher find(String all, String regex) {
    Matcher m = Pattern.compile(regex, Pattern.MULTILINE).matcher(all);
    assertTrue(m.find(), "no line matching " + regex + " in:\n" + all);
    return m;
  }

  @Test
  void fillingEveryFaceIsNoSpaceAndEveryByteComesBack() throws Exception {
    // 48 MiB of tmpfs, 40 MiB of capacity.dram: the block pool (fallocated at start), the ring
    // files and the block key files fit; no region the capacity allows can fill the tmpfs.
    List<String> out =
        PrivateTmpfs.run(
            Path.of("/dev/shm"),
            "72m",
            Duration.ofSeconds(90),
            FaceExhaustionChild.class.getName(),
            dir.toString());
    String all = String.join("\n", out);
    Matcher started = find(all, "^STEP started: dram used 0 B, tmpfs used (\\d+) of \\d+ B$");
    // The block pool takes the whole capacity at start, and its files get their space then.
    assertTrue(
        Long.parseLong(started.group(1)) >= FaceExhaustionChild.CAPACITY_BYTES,
        "region files without their space (sparse)\n" + all);

    Matcher tcp =
        find(all, "^STEP nodes tcp: (\\d+) files of \\d+ B then NO_SPACE, all read back$");
    Matcher shm =
        find(all, "^STEP nodes shm: (\\d+) files of \\d+ B then NO_SPACE, all read back$");
    int files = Integer.parseInt(tcp.group(1));
    assertTrue(files > 0 && files <= 40, "1 MiB files in 40 MiB: " + files + "\n" + all);
    assertEquals(files, Integer.parseInt(shm.group(1)), "as much again after the deletes\n" + all);
    find(all, "^STEP nodes tcp: removed, dram used 0$");
    find(all, "^STEP nodes shm: removed, dram used 0$");

    find(all, "^STEP kv huge: NO_SPACE by capacity, dram used 0$");
    Matcher values =
        find(
            all,
            "^STEP kv values: table \\d+ B, (\\d+) values of \\d+ B then NO_SPACE,"
                + " dram used at most (\\d+) B of (\\d+), all read back$");
    assertTrue(Integer.parseInt(values.group(1)) > 0, all);
    assertTrue(
        Long.parseLong(values.group(2)) <= Long.parseLong(values.group(3)),
        "more than the capacity held\n" + all);
    find(all, "^STEP kv dropped: dram used 0$");

    Matcher tmpfs = find(all, "^STEP tmpfs used (\\d+) B, after start (\\d+) B$");
    assertEquals(tmpfs.group(2), tmpfs.group(1), "space left held on the tmpfs\n" + all);
    find(all, "^STEP done$");
  }
}
