package io.ferrite.tx.server;

import io.ferrite.kv.server.OpLog;

/** Test access to the tx logs' injected fsync, for tests outside this package. */
public final class TxLogsTesting {
  private TxLogsTesting() {}

  /** The fsync the logs of tx services started from now on use (null: a real one). */
  public static void fsync(OpLog.Fsync fsync) {
    TxLogs.testFsync = fsync;
  }

  /** Checkpoints made by every tx server in this JVM so far. */
  public static long checkpoints() {
    return TxLogs.CHECKPOINTS.get();
  }
}
