package io.ferrite.kv.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.verify.Checksum64;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.function.Consumer;

/**
 * A memory server's append-only log of kv writes, replayed on restart (Pilaf §4 "Logging"; here
 * with a per-table policy, see {@link io.ferrite.kv.TableOptions.Durability}).
 *
 * <pre>
 *  +------------+---------------------+----------------+
 *  | length u32 | XXH3-64 of body u64 | body (length)  |   little-endian, one record per write
 *  +------------+---------------------+----------------+
 * </pre>
 *
 * Recovery reads records until the end or the first torn or corrupt one (a crash in the middle of
 * an append), cuts the file there and appends after it. Thread-safe: appends are serialised; a
 * caller that appends under its shard's lock keeps the log in the order writes were applied.
 *
 * <p>{@link #rewrite} replaces the whole log by a shorter one (compaction): the new records go to
 * {@code <file>.rewrite}, which is fsynced, renamed over the log (atomic) and the directory
 * fsynced; a crash before the rename leaves the old log whole (the stale file is deleted at the
 * next open), after it the new one.
 */
final class OpLog implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(OpLog.class.getName());
  static final int MAX_RECORD = 64 << 20;

  private FileChannel channel;
  private final Path file;
  private long appended;
  private long synced;

  private OpLog(FileChannel channel, Path file, long records) {
    this.channel = channel;
    this.file = file;
    this.appended = records;
    this.synced = records;
  }

  private static Path compactFile(Path file) {
    return file.resolveSibling(file.getFileName() + ".rewrite");
  }

  /** Opens (or creates) {@code file}, hands every intact record to {@code replay}, in order. */
  static OpLog open(Path file, Consumer<ByteBuffer> replay) {
    try {
      // A compaction that crashed before its rename: the log itself is whole.
      Files.deleteIfExists(compactFile(file));
      FileChannel ch =
          FileChannel.open(
              file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
      long size = ch.size();
      long pos = 0;
      long records = 0;
      ByteBuffer head = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
      while (pos + 12 <= size) {
        head.clear();
        ch.read(head, pos);
        int len = head.getInt(0);
        long sum = head.getLong(4);
        if (len < 0 || len > MAX_RECORD || pos + 12 + len > size) {
          break;
        }
        ByteBuffer body = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
        ch.read(body, pos + 12);
        if (Checksum64.of(body.array(), 0, len) != sum) {
          break;
        }
        body.flip();
        replay.accept(body);
        pos += 12 + len;
        records++;
      }
      if (pos < size) {
        LOG.log(
            System.Logger.Level.WARNING,
            "kv log {0}: torn or corrupt record at byte {1} of {2}; cut there",
            file,
            pos,
            size);
        ch.truncate(pos);
      }
      ch.position(pos);
      return new OpLog(ch, file, records);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot open kv log " + file, e);
    }
  }

  /** Appends one record (not yet durable: see {@link #sync}). */
  synchronized void append(byte[] body) {
    try {
      write(channel, body);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot append to kv log " + file, e);
    }
    appended++;
  }

  private static void write(FileChannel ch, byte[] body) throws IOException {
    if (body.length > MAX_RECORD) {
      throw new FerriteException(
          ErrorCode.INTERNAL, "kv log record of " + body.length + " B (max " + MAX_RECORD + ")");
    }
    ByteBuffer b = ByteBuffer.allocate(12 + body.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(body.length).putLong(Checksum64.of(body)).put(body).flip();
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  /** The log's size in bytes. */
  synchronized long bytes() {
    try {
      return channel.size();
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot size kv log " + file, e);
    }
  }

  /**
   * Replaces the log by the records {@code snapshot} hands to its sink, in order (see the class
   * comment). The caller makes sure nothing is appended meanwhile and that the records rebuild what
   * the old log did. On failure the old log stays in use and the partial new one is deleted.
   */
  synchronized void rewrite(Consumer<Consumer<byte[]>> snapshot) {
    Path tmp = compactFile(file);
    FileChannel fresh = null;
    try {
      fresh =
          FileChannel.open(
              tmp,
              StandardOpenOption.CREATE,
              StandardOpenOption.TRUNCATE_EXISTING,
              StandardOpenOption.READ,
              StandardOpenOption.WRITE);
      FileChannel out = fresh;
      long[] records = new long[1];
      snapshot.accept(
          body -> {
            try {
              write(out, body);
            } catch (IOException e) {
              throw new FerriteException(ErrorCode.INTERNAL, "cannot write " + tmp, e);
            }
            records[0]++;
          });
      fresh.force(true);
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      syncDirectory(file.toAbsolutePath().getParent());
      FileChannel old = channel;
      channel = fresh;
      fresh = null;
      appended = records[0];
      synced = records[0];
      try {
        old.close();
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "closing the replaced kv log " + file, e);
      }
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot compact kv log " + file, e);
    } finally {
      if (fresh != null) {
        try {
          fresh.close();
          Files.deleteIfExists(tmp);
        } catch (IOException e) {
          LOG.log(System.Logger.Level.WARNING, "removing " + tmp, e);
        }
      }
    }
  }

  private static void syncDirectory(Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    }
  }

  /** Makes every record appended so far durable (fsync); cheap when nothing is new. */
  void sync() {
    long target;
    FileChannel ch;
    synchronized (this) {
      target = appended;
      ch = channel;
      if (synced >= target) {
        return;
      }
    }
    try {
      ch.force(false);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot fsync kv log " + file, e);
    }
    synchronized (this) {
      synced = Math.max(synced, target);
    }
  }

  @Override
  public void close() {
    try {
      sync();
      channel.close();
    } catch (IOException | FerriteException e) {
      LOG.log(System.Logger.Level.WARNING, "closing kv log " + file, e);
    }
  }
}
