package io.ferrite.fabric;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Gives a new file that will be mapped its space at creation, so that a full file system (a full
 * tmpfs: the host's RAM) is a typed {@link ErrorCode#NO_SPACE} then, never a {@code SIGBUS} (or the
 * JVM's "a fault occurred in a recent unsafe memory access operation") when a page is first touched
 * through the mapping, in the server or in a same-host client that maps the file.
 *
 * <p>Java has no {@code fallocate}. Large files get it from the {@code fallocate(1)} command
 * (util-linux; {@code posix_fallocate} semantics: on tmpfs it commits the pages without writing
 * them, on ext4/xfs it reserves extents); smaller ones, and any file when the command is missing or
 * the file system does not support it, get zeros written in 1 MiB chunks. Measured on tmpfs on this
 * project's VM (2 cores shared with four builds, so noisy; `java Alloc.java /dev/shm N`, 6 rounds
 * each): 256 KiB and 1 MiB zeros 0.3-1.5 ms against 3-24 ms for the subprocess; 4 MiB 1.3 against
 * 3-5 ms; 16 MiB 9-42 against 4-56 ms (a toss-up); 64 MiB 80-230 ms against 10-25 ms (117 ms for
 * the JVM's first spawn). Hence the subprocess from {@link #SUBPROCESS_FROM} (32 MiB) on.
 */
public final class FileSpace {
  private static final System.Logger LOG = System.getLogger(FileSpace.class.getName());

  /** Files from this size on are given space by {@code fallocate(1)}; smaller ones get zeros. */
  public static final long SUBPROCESS_FROM = 32L << 20;

  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20);

  /** Cleared once {@code fallocate(1)} could not be run: zeros from then on. */
  private static volatile boolean commandWorks = true;

  private FileSpace() {}

  /**
   * Makes {@code file} (open as {@code ch}, empty) {@code length} bytes long with every byte's
   * space allocated.
   *
   * @throws FerriteException NO_SPACE if the file system is full (the file is left partly
   *     allocated: the caller deletes it), INTERNAL for another I/O failure
   */
  public static void allocate(FileChannel ch, Path file, long length) {
    if (length >= SUBPROCESS_FROM && commandWorks && fallocate(file, length)) {
      return;
    }
    try {
      for (long at = ch.size(); at < length; ) {
        ByteBuffer z = ZEROS.duplicate();
        z.limit((int) Math.min(z.capacity(), length - at));
        at += ch.write(z, at);
      }
    } catch (IOException e) {
      throw failed(file, length, String.valueOf(e.getMessage()), e);
    }
  }

  /** Whether {@code fallocate(1)} allocated the file; false if zeros must do it instead. */
  private static boolean fallocate(Path file, long length) {
    Process p;
    try {
      p =
          new ProcessBuilder("fallocate", "-l", Long.toString(length), file.toString())
              .redirectErrorStream(true)
              .start();
    } catch (IOException e) {
      commandWorks = false;
      LOG.log(System.Logger.Level.INFO, "no fallocate command ({0}): writing zeros instead", e);
      return false;
    }
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new FerriteException(ErrorCode.INTERNAL, "fallocate of " + file + " hung");
      }
      if (p.exitValue() == 0) {
        return true;
      }
      if (out.contains("No space left")) {
        throw failed(file, length, out, null);
      }
      // Not supported by this file system (or anything else): zeros work everywhere.
      LOG.log(System.Logger.Level.DEBUG, "fallocate {0}: {1}; writing zeros", file, out);
      return false;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new FerriteException(ErrorCode.INTERNAL, "interrupted allocating " + file, e);
    }
  }

  /**
   * The error for a file that could not get {@code length} bytes: NO_SPACE when the file system
   * said it is full, else INTERNAL.
   */
  static FerriteException failed(Path file, long length, String why, Throwable cause) {
    boolean full = why.contains("No space left") || why.contains("Disk quota exceeded");
    return new FerriteException(
        full ? ErrorCode.NO_SPACE : ErrorCode.INTERNAL,
        (full ? "no space for " : "cannot allocate ")
            + length
            + " B for "
            + file
            + " ("
            + why
            + (full ? "; the file system, a tmpfs is the host's RAM, is full)" : ")"),
        cause);
  }
}
