package io.ferrite.fabric.shm;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Run by {@link TmpfsExhaustionTest} in a private mount namespace, with {@code args[0]} a small
 * tmpfs of its own: fills it with region files (touching every page of each, as a server serving it
 * and a same-host client mapping it would), then asks for a ring file and one more region on the
 * full tmpfs, then frees everything and fills it again. Prints one line per step; any fault would
 * kill this JVM (SIGBUS, or an InternalError) instead of printing the last line.
 */
public final class TmpfsFillChild {
  private TmpfsFillChild() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    long length = Long.parseLong(args[1]);
    List<MappedRegion> made = new ArrayList<>();
    String refused = fill(dir, length, made);
    System.out.println("created " + made.size() + " then " + refused);
    // A client's view: the file mapped a second time, every page written.
    try (MappedRegion client =
        MappedRegion.open(made.get(0).file(), 999, length, made.get(0).rkey())) {
      for (int at = 0; at < length; at += 4096) {
        client.buffer().putLong(at, at);
      }
    }
    System.out.println("client wrote every page");
    try {
      RingFile.create(dir, "rpc-1-", 1 << 16, 1 << 16).close();
      System.out.println("ring created");
    } catch (FerriteException e) {
      System.out.println("ring " + e.code());
    }
    try (var s = Files.list(dir)) {
      System.out.println("leftovers " + s.filter(p -> p.toString().endsWith(".rings")).count());
    }
    int before = made.size();
    for (MappedRegion r : made) {
      r.closeAndDelete();
    }
    made.clear();
    String again = fill(dir, length, made);
    System.out.println("again " + made.size() + " of " + before + " then " + again);
    for (MappedRegion r : made) {
      r.closeAndDelete();
    }
    System.out.println("done");
  }

  /**
   * Creates regions until refused (at most 64: with lazily allocated files that is far more than
   * fit), and only then touches every page of each: a file that did not get its space at creation
   * would fault here, killing the JVM.
   */
  private static String fill(Path dir, long length, List<MappedRegion> made) {
    String refused = "never refused";
    for (int id = made.size() + 1; id <= 64; id++) {
      try {
        made.add(
            MappedRegion.create(
                dir.resolve("region-" + id + "-" + System.nanoTime()), id, length, 1));
      } catch (FerriteException e) {
        refused = e.code().name();
        break;
      }
    }
    for (MappedRegion r : made) {
      for (int at = 0; at < length; at += 4096) {
        r.buffer().putLong(at, r.id());
      }
    }
    return refused;
  }
}
