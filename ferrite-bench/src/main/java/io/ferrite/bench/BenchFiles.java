package io.ferrite.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** The bench suites' scratch directories (data dirs, shm dirs), removed when a suite ends. */
public final class BenchFiles {
  private BenchFiles() {}

  /** Deletes {@code dir} and everything under it; nothing if it does not exist. */
  public static void deleteTree(Path dir) throws IOException {
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
