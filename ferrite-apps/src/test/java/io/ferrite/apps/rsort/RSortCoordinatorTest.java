package io.ferrite.apps.rsort;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.RStore;
import io.ferrite.memory.master.MemoryMaster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The coordinator's namespace rules, before any worker starts: a prefix in use is refused, an
 * earlier sort's output is refused (and never deleted by the failed run), and {@code clean} deletes
 * a job's namespaces.
 */
class RSortCoordinatorTest {
  static final Credentials CREDENTIALS =
      new Credentials(
          "rsort-test", "0123456789abcdef-rsort-secret".getBytes(StandardCharsets.UTF_8));

  @TempDir Path dir;
  ClusterHarness cluster;
  RStore store;
  final RSortJob job = new RSortJob(1000, 1, null, 2, null, "t/", false, Duration.ofMinutes(1));

  @BeforeEach
  void start() throws Exception {
    cluster =
        new ClusterHarness(
            dir,
            CREDENTIALS,
            false,
            Map.of(
                FerriteConfig.REGION_SIZE, "1m",
                FerriteConfig.CAPACITY_DRAM, "4m",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.DEAD_TIMEOUT, "5s"));
    cluster.startMaster(List.of(new MemoryMaster()));
    cluster.startServer("s0");
    store = new RStore(cluster.client());
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private RSortCoordinator coordinator() {
    WorkerLauncher none =
        (label, args, jvm) -> {
          throw new AssertionError("no worker may start: " + label);
        };
    return new RSortCoordinator(store, null, job, none, null);
  }

  private boolean exists(String name) {
    try {
      store.joinNamespace(name);
      return true;
    } catch (FerriteException e) {
      return false;
    }
  }

  @Test
  void anEarlierOutputIsRefusedKeptAndCleaned() throws Exception {
    store.createNamespace("t/final_1");
    RSortCoordinator c = coordinator();
    FerriteException e = assertThrows(FerriteException.class, c::run);
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.getMessage().contains("t/final_1 exist"), e.getMessage());
    assertTrue(
        e.getMessage().contains("ferrite rsort --clean --workers 2 --namespace-prefix t/"),
        e.getMessage());
    assertEquals(List.of(), c.deleteNamespaces());
    assertTrue(exists("t/final_1"), "a failed run never deletes an earlier output");
    assertTrue(!exists("t/coordinator"), "the failed run let go of the prefix");

    List<List<String>> cleaned = coordinator().clean();
    assertEquals(List.of("t/final_1"), cleaned.get(0));
    assertEquals(List.of(), cleaned.get(1));
    assertTrue(!exists("t/final_1"));
  }

  @Test
  void aWorkersFailureKeepsItsCode() {
    io.ferrite.memory.Namespace ns = store.createNamespace("t/area");
    ns.reserve(RSortLayout.regionBytes(2));
    io.ferrite.memory.Mapping m =
        ns.alloc(RSortLayout.regionBytes(2), io.ferrite.memory.MemoryFlags.ALLOC_DEFAULT)
            .map(io.ferrite.memory.MemoryFlags.MAP_NO_BUFFER);
    try {
      WorkerArea a = new WorkerArea(m, 1);
      a.error(ErrorCode.NO_SPACE, "worker 1 failed in phase load: NO_SPACE: dram full");
      assertEquals(
          new io.ferrite.apps.worker.WorkerError(
              ErrorCode.NO_SPACE, "worker 1 failed in phase load: NO_SPACE: dram full"),
          a.error());
      // A text cut at ERROR_MAX keeps its code; a failure without a Ferrite code is INTERNAL.
      a.error(ErrorCode.INTERNAL, "x".repeat(2 * RSortLayout.ERROR_MAX));
      io.ferrite.apps.worker.WorkerError f = a.error();
      assertEquals(ErrorCode.INTERNAL, f.code());
      assertEquals(RSortLayout.ERROR_MAX - "INTERNAL|".length(), f.text().length());
    } finally {
      m.unmap();
    }
  }

  @Test
  void aPrefixInUseIsRefusedAndLeftAlone() {
    store.createNamespace("t/coordinator");
    store.createNamespace("t/input_0");
    RSortCoordinator c = coordinator();
    FerriteException e = assertThrows(FerriteException.class, c::run);
    assertTrue(e.getMessage().contains("another sort with namespace prefix 't/'"), e.getMessage());
    assertEquals(List.of(), c.deleteNamespaces());
    assertTrue(exists("t/coordinator") && exists("t/input_0"), "another sort's namespaces");
  }
}
