package io.ferrite.apps.carafe.pregel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.worker.WorkerLauncher;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The worker JVMs a job asks for: a small job starts fast, a large one compiles with C2 only. */
class ProcessWorkersTest {
  @Test
  void aSmallJobStartsFastWithNoFurtherOptions() {
    WorkerLauncher.Jvm jvm = ProcessWorkers.jvm(1_000, ProcessWorkers.QUICK_START_EDGES - 1, 2);
    assertTrue(jvm.quickStart());
    assertEquals(List.of(), jvm.options());
  }

  @Test
  void aLargeJobsWorkersRunWithoutTieredCompilation() {
    WorkerLauncher.Jvm jvm = ProcessWorkers.jvm(1_043_321, 16_777_216, 2);
    assertFalse(jvm.quickStart());
    assertEquals(List.of("-XX:-TieredCompilation"), jvm.options());
    assertEquals(1, jvm.threads());
    // Bounds that grow with the graph and shrink with the workers' share of it.
    assertTrue(
        ProcessWorkers.jvm(1_043_321, 16_777_216, 1).heapBytes() > jvm.heapBytes(), jvm.toString());
  }
}
