package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.ferrite.fabric.FabricTuning;
import org.junit.jupiter.api.Test;

/** The shm fabric's switches ({@link FabricTuning}) reach its rings, both ends. */
class ShmTuningTest extends RingTestSupport {
  @Test
  void ringsAreOnByDefaultWithoutSpinning() throws Exception {
    start(new ShmFabric(FabricTuning.DEFAULTS), 1, 16);
    RingClient rings = connect().rings();
    assertNotNull(rings);
    assertEquals(0, rings.busySpinNanos);
    assertEquals(0, ringServer().spinNanos);
  }

  @Test
  void ringsOffKeepsRpcsOnTheSocket() throws Exception {
    start(new ShmFabric(FabricTuning.DEFAULTS.withShmRings(false)), 1, 16);
    assertNull(ringServer(), "the server offers no rings");
    assertNull(connect().rings(), "the client has none");
  }

  @Test
  void spinsReachCallerAndPoller() throws Exception {
    start(new ShmFabric(FabricTuning.DEFAULTS.withShmSpins(1234, 5678)), 1, 16);
    assertEquals(1234, connect().rings().busySpinNanos);
    assertEquals(5678, ringServer().spinNanos);
  }
}
