package io.ferrite.tx.server;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxProtocol;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A log that cannot append does not stop the apply ({@link TxLogs#logAndApply}): the apply is what
 * releases a committed transaction's object locks, and before this a failed append left them locked
 * for good (TxRepairTest hung on objects that stayed locked). The error still reaches the caller.
 */
class TxLogsApplyTest {
  @TempDir Path dir;

  @Test
  void aLogThatCannotAppendStillLetsTheWritesApplyAndSaysSo() {
    try (TxLogs logs = new TxLogs(dir, TxLogs.Sync.NONE, Duration.ofSeconds(1), 1)) {
      logs.create(1).close(); // a log that refuses every append from now on (a broken disk)
      AtomicBoolean applied = new AtomicBoolean();
      TxService.Write w =
          new TxService.Write(new FatPointer(1, 64, 8, 0), 2, TxProtocol.KIND_WRITE, new byte[8]);
      FerriteException e =
          assertThrows(
              FerriteException.class,
              () -> logs.logAndApply(List.of(w), () -> applied.set(true), region -> true));
      assertTrue(applied.get(), "the writes were not applied: their locks stay held");
      assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }
  }
}
