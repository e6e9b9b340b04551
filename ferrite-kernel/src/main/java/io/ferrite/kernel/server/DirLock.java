package io.ferrite.kernel.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.Secrets;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An exclusive lock on a directory (a {@code lock} file held with {@link FileChannel#tryLock}), so
 * that two processes never share a server's directory or its dram region directory. The OS drops
 * the lock when the process dies, so a crashed server does not block its restart.
 */
final class DirLock implements AutoCloseable {
  static final String FILE = "lock";

  private final Path dir;
  private final FileChannel channel;
  private final FileLock lock;

  private DirLock(Path dir, FileChannel channel, FileLock lock) {
    this.dir = dir;
    this.channel = channel;
    this.lock = lock;
  }

  /**
   * Creates {@code dir} (mode 0700) if needed and locks it.
   *
   * @throws FerriteException CONFLICT if another process holds it, saying what {@code what} is
   */
  static DirLock acquire(Path dir, String what) throws IOException {
    Secrets.createPrivateDirectories(dir);
    FileChannel ch =
        FileChannel.open(dir.resolve(FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    FileLock lock;
    try {
      lock = ch.tryLock();
    } catch (OverlappingFileLockException e) {
      lock = null; // held by this very JVM (e.g. two servers started in one process)
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    if (lock == null) {
      ch.close();
      throw new FerriteException(
          ErrorCode.CONFLICT, what + " " + dir + " is in use by another process");
    }
    return new DirLock(dir, ch, lock);
  }

  Path dir() {
    return dir;
  }

  /** Releases the lock; with {@code removeDir}, also the lock file and the directory if empty. */
  void release(boolean removeDir) throws IOException {
    if (channel.isOpen()) {
      lock.release();
      channel.close();
    }
    if (removeDir) {
      Files.deleteIfExists(dir.resolve(FILE));
      removeIfEmpty(dir);
      // The cluster's directory (e.g. /dev/shm/ferrite-<cluster>) goes with its last server.
      if (dir.getParent() != null
          && dir.getParent().getFileName().toString().startsWith("ferrite-")) {
        removeIfEmpty(dir.getParent());
      }
    }
  }

  private static void removeIfEmpty(Path d) throws IOException {
    try {
      Files.deleteIfExists(d);
    } catch (java.nio.file.DirectoryNotEmptyException e) {
      // Still in use (another server's directory, or files left on purpose): keep it.
      return;
    }
  }

  @Override
  public void close() throws IOException {
    release(false);
  }
}
