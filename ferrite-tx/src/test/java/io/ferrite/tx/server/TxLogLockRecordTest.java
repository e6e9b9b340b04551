package io.ferrite.tx.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A participant's LOCK and RESOLVED records in a region's log ({@link TxLog#lock}, {@link
 * TxLog#resolve}), replayed into a copy as a backup's LOCK, COMMIT and ABORT records: a LOCK record
 * without an outcome is handed over for locking again, also across a checkpoint; a committed one
 * applies its writes, by version, so a later LOCK record of the same object expects what it
 * installed; an abort that overtook the LOCK record keeps it out of the log.
 */
class TxLogLockRecordTest {
  static final int REGION = 5;
  static final long SLAB = 4096;

  @TempDir Path dir;
  final TxLogAppender appender = new TxLogAppender(1);
  final List<MappedRegion> memories = new ArrayList<>();

  @AfterEach
  void close() {
    appender.close();
    memories.forEach(MappedRegion::close);
  }

  private Path file() {
    return dir.resolve("region-" + REGION + ".log");
  }

  private TxLog fresh() {
    return TxLog.open(REGION, file(), null, new TxLog.Replay(), OpLog.Fsync.DATA, appender);
  }

  /** The log replayed into a new copy (as {@link TxLogs#recover} does); the log stays open. */
  private TxMirror replay(TxLog[] opened) {
    MappedRegion m =
        MappedRegion.create(dir.resolve("mem-" + memories.size()), 1, 16 * SLAB, 0x1234L);
    memories.add(m);
    TxMirror copy = new TxMirror(REGION, m, SLAB);
    opened[0] = TxLog.open(REGION, file(), copy, new TxLog.Replay(), OpLog.Fsync.DATA, appender);
    copy.log(opened[0]);
    return copy;
  }

  private static final FatPointer X = new FatPointer(REGION, 0, 8, 0);

  private static TxService.Write write(long expected, long value) {
    byte[] v = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array();
    return new TxService.Write(X, expected, TxProtocol.KIND_WRITE, v);
  }

  /** X's version and value in {@code copy}'s memory. */
  private static long[] x(TxMirror copy) {
    ByteBuffer b = ByteBuffer.allocate(ObjectLayout.LINE).order(ByteOrder.LITTLE_ENDIAN);
    copy.memory().readInto(0, b);
    b.clear();
    long v = ObjectLayout.verify(b, 1, 0);
    return new long[] {
      v, ByteBuffer.wrap(ObjectLayout.payload(b, 8)).order(ByteOrder.LITTLE_ENDIAN).getLong()
    };
  }

  @Test
  void anUnresolvedLockRecordIsHandedOverAlsoAcrossACheckpoint() {
    TxLog l = fresh();
    l.writes(List.of(write(0, 1)), true); // X allocated at version 1, value 1
    assertTrue(l.lock(7, 99, List.of(write(1, 2))));
    l.checkpoint(image -> image.accept(write(0, 1))); // the image: X at version 1
    l.close();

    TxLog[] reopened = new TxLog[1];
    TxMirror copy = replay(reopened);
    TxMirror.Taken taken = copy.promote();
    assertEquals(1, taken.locks().size(), "the checkpoint kept the unresolved LOCK record");
    assertEquals(7, taken.locks().get(0).txid());
    assertEquals(99, taken.locks().get(0).deciderRegion());
    assertEquals(1, x(copy)[0], "not applied: its outcome is unknown");
    assertEquals(1, reopened[0].lockRecords());

    assertTrue(reopened[0].resolve(7, true));
    reopened[0].checkpoint(image -> image.accept(write(1, 2))); // applied by the primary
    reopened[0].close();
    TxMirror again = replay(reopened);
    assertEquals(0, again.promote().locks().size(), "resolved: left out of the checkpoint");
    assertEquals(2, x(again)[1]);
    reopened[0].close();
  }

  @Test
  void aCommittedLockRecordAppliesAndALaterOneOfTheSameObjectIsHandedOver() {
    TxLog l = fresh();
    l.writes(List.of(write(0, 1)), true);
    assertTrue(l.lock(7, 99, List.of(write(1, 2))));
    assertTrue(l.resolve(7, true)); // X at version 2, value 2
    assertTrue(l.lock(8, 99, List.of(write(2, 3)))); // expects version 2
    l.close();

    TxLog[] reopened = new TxLog[1];
    TxMirror copy = replay(reopened);
    assertEquals(2, x(copy)[0]);
    assertEquals(2, x(copy)[1]);
    TxMirror.Taken taken = copy.promote();
    assertEquals(1, taken.locks().size());
    assertEquals(8, taken.locks().get(0).txid());
    assertEquals(2, taken.locks().get(0).writes().get(0).expected());
    reopened[0].close();
  }

  @Test
  void anAbortedLockRecordIsDroppedAndAnAbortFirstKeepsItOut() {
    TxLog l = fresh();
    l.writes(List.of(write(0, 1)), true);
    assertTrue(l.lock(7, 99, List.of(write(1, 2))));
    assertTrue(l.resolve(7, false));
    assertFalse(l.resolve(9, false), "no LOCK record of 9 yet");
    assertFalse(l.lock(9, 99, List.of(write(1, 4))), "aborted first: never written");
    assertEquals(0, l.lockRecords());
    l.close();

    TxLog[] reopened = new TxLog[1];
    TxMirror copy = replay(reopened);
    assertEquals(0, copy.promote().locks().size());
    assertEquals(1, x(copy)[0], "the old version kept");
    assertEquals(1, x(copy)[1]);
    reopened[0].close();
  }
}
