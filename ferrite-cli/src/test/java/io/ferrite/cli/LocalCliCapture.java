package io.ferrite.cli;

import io.ferrite.fabric.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CliCapture} for tests that start {@code ferrite local} in this JVM: a private directory
 * and a private shm directory under /dev/shm, removed after each test (also when it fails).
 */
abstract class LocalCliCapture extends CliCapture {
  @TempDir Path dir;
  Path shm;

  @BeforeEach
  void shmDir() throws IOException {
    shm = Files.createTempDirectory(Path.of("/dev/shm"), "fc");
  }

  @AfterEach
  void removeShmDir() throws IOException {
    FileTrees.delete(shm);
  }
}
