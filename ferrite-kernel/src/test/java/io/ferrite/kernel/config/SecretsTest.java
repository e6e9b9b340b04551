package io.ferrite.kernel.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.testing.TestThreads;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client secret file beside a root secret. */
class SecretsTest {
  @TempDir Path dir;

  @Test
  void processesStartedTogetherAllWriteTheClientSecret() throws Exception {
    // A master and its servers started at once on one directory each write client.secret (found
    // when a master process died with NoSuchFileException on client.secret.tmp): every writer
    // must succeed, the file must hold the CLIENT secret, and no temporary file may stay.
    Path root = dir.resolve("secret");
    byte[] secret = Secrets.readOrCreate(root);
    int writers = 8;
    for (int round = 0; round < 20; round++) {
      Files.deleteIfExists(dir.resolve(Secrets.CLIENT_FILE));
      CyclicBarrier start = new CyclicBarrier(writers);
      try (TestThreads threads = new TestThreads()) {
        for (int w = 0; w < writers; w++) {
          threads.start(
              "writer-" + w,
              () -> {
                start.await();
                Secrets.writeClientSecret(root, secret);
              });
        }
      }
      Credentials client = Secrets.load("c", dir.resolve(Secrets.CLIENT_FILE));
      assertEquals(Role.CLIENT, client.role());
      assertArrayEquals(new Credentials("c", secret).secretFor(Role.CLIENT), client.secret());
      try (Stream<Path> files = Files.list(dir)) {
        assertEquals(
            List.of(Secrets.CLIENT_FILE, "secret"),
            files.map(p -> p.getFileName().toString()).sorted().toList());
      }
    }
  }
}
