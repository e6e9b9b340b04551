package io.ferrite.kernel.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The harness a face's cluster fixture extends leaves /dev/shm as found, also when it fails. */
class ClusterHarnessTest {
  private static final Credentials CREDENTIALS =
      new Credentials(
          "harness-test", "0123456789abcdef-harness-secret".getBytes(StandardCharsets.UTF_8));

  @TempDir Path dir;

  /** A fixture whose start fails after the master and a server started. */
  private static final class Failing extends ClusterHarness {
    Failing(Path dir) throws IOException {
      super(dir, CREDENTIALS, false, Map.of());
      startOrClose(
          () -> {
            startMaster();
            startServer("s0");
            throw new IllegalStateException("the second server could not start");
          });
    }
  }

  @Test
  void aFixtureWhoseStartFailsClosesWhatItStartedAndLeavesNoShmDirectory() throws IOException {
    assertEquals(List.of(), ours(), "none before");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> new Failing(dir));
    assertTrue(e.getMessage().contains("could not start"), e.getMessage());
    assertEquals(List.of(), ours(), "the fixture's shm directory is gone");
  }

  private static List<Path> ours() throws IOException {
    try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
      return s.filter(p -> p.getFileName().toString().startsWith("ferrite-harness-test-")).toList();
    }
  }
}
