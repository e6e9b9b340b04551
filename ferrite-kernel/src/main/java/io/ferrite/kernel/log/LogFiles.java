package io.ferrite.kernel.log;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Preallocation of append-only logs. A log grows in zero-filled steps of {@link #PREALLOCATE} bytes
 * written ahead of its records: an fdatasync of records written over zeros already on disk changes
 * no file metadata (size, extents), so the file system commits no journal of its own for it
 * (measured on this project's VM: about 100-110 us against 130-170 us for an fdatasync after an
 * append that grows the file). A reader of such a log takes an all-zero tail for its clean end.
 */
public final class LogFiles {
  /** Bytes a log grows by at a time. */
  public static final int PREALLOCATE = 1 << 20;

  private static final ByteBuffer ZEROS = ByteBuffer.allocate(64 << 10);

  private LogFiles() {}

  /**
   * Zero-fills {@code ch} from {@code allocated} to at least {@code upTo} plus {@link #PREALLOCATE}
   * with positional writes (the channel's position, the log's end, stays); returns the new end of
   * the zero-filled space. A page-cache write of 1 MiB once per MiB of log; the log's next
   * fdatasync writes it out with the records.
   */
  public static long zeroFill(FileChannel ch, long allocated, long upTo) throws IOException {
    long target = Math.max(upTo, allocated) + PREALLOCATE;
    long at = allocated;
    while (at < target) {
      ByteBuffer z = ZEROS.duplicate();
      z.limit((int) Math.min(z.capacity(), target - at));
      at += ch.write(z, at);
    }
    return at;
  }
}
