package io.ferrite.kernel.proto;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The host identity names the network namespace on Linux; ferrite-cli's CrossHostTest shows that
 * processes in different namespaces then never pick shm (its counters stay at 0).
 */
class HostIdentityTest {
  @Test
  void theIdentityEndsWithTheNetworkNamespace() throws Exception {
    String id = HostIdentity.local();
    String[] parts = id.split("/");
    assertEquals(3, parts.length, id);
    Path ns = Path.of("/proc/self/ns/net");
    if (Files.exists(ns, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      String link = Files.readSymbolicLink(ns).toString(); // net:[4026531833]
      assertEquals(link.replace("[", "").replace("]", ""), parts[2]);
      assertTrue(parts[2].matches("net:[0-9]+"), parts[2]);
    }
  }
}
