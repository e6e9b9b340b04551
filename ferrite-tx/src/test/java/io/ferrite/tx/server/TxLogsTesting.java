package io.ferrite.tx.server;

import io.ferrite.kernel.log.OpLog;

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

  /**
   * While set, a tx service that stops stops as a SIGKILL leaves its logs: records queued to the
   * appender are dropped, not written (only what was written with {@code write(2)} is in the file).
   */
  public static void crashOnClose(boolean crash) {
    TxLogs.testCrashOnClose = crash;
  }

  /**
   * While set, the tx log appenders of this JVM write nothing: what is queued stays queued (and is
   * dropped by a crash, {@link #crashOnClose}), so a test sees which records were written by the
   * thread that answered.
   */
  public static void pauseAppenders(boolean paused) {
    TxLogAppender.testPaused = paused;
  }
}
