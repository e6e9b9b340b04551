package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.file.Path;

/**
 * The master's journal holds a bad record followed by valid ones (or a damaged snapshot): not the
 * torn tail of a crash, which recovery cuts by itself, but corruption. The master refuses to start
 * rather than drop records that were fsynced and acknowledged; {@code ferrite master
 * --repair-journal} truncates at {@link #offset()} when an operator asks for it.
 */
public final class JournalCorruptException extends FerriteException {
  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final long offset;

  JournalCorruptException(Path file, long offset, int goodRecords, long nextValid) {
    super(ErrorCode.INTERNAL, message(file, offset, goodRecords, nextValid));
    this.file = file;
    this.offset = offset;
  }

  private static String message(Path file, long offset, int goodRecords, long nextValid) {
    String after =
        nextValid > offset
            ? "a valid record follows at offset " + nextValid + ", so this is not a torn tail"
            : "the file is damaged there";
    return "master journal "
        + file
        + " is corrupt at offset "
        + offset
        + " (after "
        + goodRecords
        + " good records): "
        + after
        + ". The master will not start and drop fsynced records silently. Restore the journal"
        + " directory from a copy, or run `ferrite master --repair-journal` to truncate it at"
        + " offset "
        + offset
        + " (the records from there on are lost).";
  }

  /** The damaged file. */
  public Path file() {
    return file;
  }

  /** Where its first bad record starts. */
  public long offset() {
    return offset;
  }
}
