package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** When the single master's journal takes a snapshot ({@link Master#snapshotDue}). */
class SnapshotDueTest {
  @Test
  void aSmallStateIsSnapshottedEveryConfiguredRecords() {
    assertFalse(Master.snapshotDue(9_999, 10_000, 0));
    assertTrue(Master.snapshotDue(10_000, 10_000, 0));
    assertFalse(Master.snapshotDue(9_999, 10_000, 9_000));
    assertTrue(Master.snapshotDue(10_000, 10_000, 9_000));
  }

  @Test
  void aStateLargerThanTheIntervalWaitsForALogAsLongAsItsLastSnapshot() {
    // 50 000 records in the last snapshot: not every 10 000 records, but once the log holds as
    // many records as that snapshot (a snapshot's cost per record stays constant).
    assertFalse(Master.snapshotDue(10_000, 10_000, 50_000));
    assertFalse(Master.snapshotDue(49_999, 10_000, 50_000));
    assertTrue(Master.snapshotDue(50_000, 10_000, 50_000));
    assertTrue(Master.snapshotDue(80_000, 10_000, 50_000));
  }
}
