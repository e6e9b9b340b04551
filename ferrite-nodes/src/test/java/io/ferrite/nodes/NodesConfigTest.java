package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The nodes face's keys are known when it is on the class path, checked, and reach the face. */
class NodesConfigTest {
  @TempDir Path dir;

  @Test
  void theFaceKeysAreKnownWithTheirDefaults() {
    FerriteConfig d = FerriteConfig.defaults();
    assertEquals(Duration.ofSeconds(2), NodesConfig.lookupLease(d));
    assertEquals("true", NodesConfig.leasedLookups(d));
    assertTrue(NodesConfig.cachedGets(d));
    assertTrue(FerriteConfig.KEYS.containsKey(NodesConfig.CACHED_GETS));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set(NodesConfig.LEASED_LOOKUPS, "sometimes").build());
    assertTrue(e.getMessage().contains("expected: true, false or always"), e.getMessage());
  }

  @Test
  void theMastersLookupLeaseReachesTheExtension() throws Exception {
    try (NodesCluster cluster = new NodesCluster(dir, Map.of(NodesConfig.LOOKUP_LEASE, "300ms"))) {
      cluster.startMaster();
      assertEquals(Duration.ofMillis(300), cluster.ext.lookupLease());
    }
  }

  @Test
  void theClientsSwitchesReachItsCaches() throws Exception {
    try (NodesCluster cluster = new NodesCluster(dir, Map.of())) {
      cluster.startMaster();
      FerriteClient defaults = cluster.client();
      assertTrue(new LeaseCache(defaults).on);
      assertFalse(new LeaseCache(defaults).always);
      assertTrue(new LookupCache(defaults).enabled(), "the local fabric reads version words");

      FerriteConfig off =
          cluster
              .config
              .with(NodesConfig.LEASED_LOOKUPS, "false")
              .with(NodesConfig.CACHED_GETS, "false");
      FerriteClient c =
          cluster.client(ClientOptions.builder(cluster.credentials.as(Role.CLIENT)).config(off));
      assertFalse(new LeaseCache(c).on);
      assertFalse(new LookupCache(c).enabled());

      FerriteClient always =
          cluster.client(
              ClientOptions.builder(cluster.credentials.as(Role.CLIENT))
                  .config(cluster.config.with(NodesConfig.LEASED_LOOKUPS, "always")));
      assertTrue(new LeaseCache(always).always);
    }
  }
}
