package io.ferrite.fabric;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Removal of a directory tree: the scratch directories (shm dirs, data dirs) that tests, bench
 * suites and local clusters make and remove when they end.
 */
public final class FileTrees {
  private FileTrees() {}

  /**
   * Deletes {@code dir} and everything under it, deepest first; nothing if it does not exist.
   * Entries that vanish meanwhile are not an error.
   */
  public static void delete(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
