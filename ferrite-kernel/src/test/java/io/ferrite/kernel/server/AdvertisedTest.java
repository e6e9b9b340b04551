package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.FerriteException;
import org.junit.jupiter.api.Test;

/**
 * A server bound to a wildcard announces an address other hosts can use; the multi-host run
 * (ferrite-cli's CrossHostTest, servers bound to 0.0.0.0 in their own network namespaces) shows it
 * across hosts.
 */
class AdvertisedTest {
  @Test
  void aWildcardTcpEndpointAnnouncesTheAddressTowardTheMaster() {
    assertEquals(
        "tcp://127.0.0.1:7201", Advertised.address("tcp://0.0.0.0:7201", "tcp://127.0.0.1:7100"));
    assertEquals(
        "tcp://127.0.0.1:7201", Advertised.address("tcp://0.0.0.0:7201", "tcp://localhost:7100"));
  }

  @Test
  void aMasterGroupsFirstMasterStandsForTheGroup() {
    assertEquals(
        "tcp://127.0.0.1:7201",
        Advertised.address(
            "tcp://0.0.0.0:7201",
            "tcp://127.0.0.1:7100,tcp://127.0.0.2:7100,tcp://127.0.0.3:7100"));
    assertEquals(
        "tcp://127.0.0.1:7201",
        Advertised.address("tcp://0.0.0.0:7201", "tcp://127.0.0.1:7100;tcp://127.0.0.4:7100"));
  }

  @Test
  void anythingElseAnnouncesWhatItBound() {
    assertEquals(
        "tcp://127.0.0.2:7201", Advertised.address("tcp://127.0.0.2:7201", "tcp://127.0.0.1:7100"));
    assertEquals(
        "shm:///dev/shm/ferrite/s1.sock",
        Advertised.address("shm:///dev/shm/ferrite/s1.sock", "tcp://127.0.0.1:7100"));
  }

  @Test
  void aWildcardWithAMasterOffTcpAsksForAnAddress() {
    assertThrows(
        FerriteException.class, () -> Advertised.address("tcp://0.0.0.0:7201", "local://node-0-1"));
  }
}
