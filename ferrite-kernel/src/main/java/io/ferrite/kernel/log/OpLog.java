package io.ferrite.kernel.log;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.verify.Checksum64;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * A memory server's append-only log of a face's writes (kv, tree, tx), replayed on restart (Pilaf
 * §4 "Logging"; for kv with a per-table policy, see the kv face's {@code TableOptions.Durability}).
 * It lives in the kernel because every face that logs writes uses it: kv's shards, the tree's
 * meganodes and the tx face's per-region logs ({@code TxLog}).
 *
 * <pre>
 *  +------------+---------------------+----------------+
 *  | length u32 | XXH3-64 of body u64 | body (length)  |   little-endian, one record per write
 *  +------------+---------------------+----------------+
 * </pre>
 *
 * Recovery reads records until the end or the first bad one. Only bad bytes and zeros after it (a
 * crash in the middle of an append, then the preallocation) is a torn tail: the file is cut there
 * and appends follow. An intact record after the bad one is corruption ({@link
 * LogFiles#nextRecord}): cutting would drop acknowledged writes, so the log refuses to open (and
 * the server to start) with a message naming the file and the offset. Thread-safe: appends are
 * serialised; a caller that appends under its shard's lock keeps the log in the order writes were
 * applied.
 *
 * <p>{@link #rewrite} replaces the whole log by a shorter one (compaction): the new records go to
 * {@code <file>.rewrite}, which is fsynced, renamed over the log (atomic) and the directory
 * fsynced; a crash before the rename leaves the old log whole (the stale file is deleted at the
 * next open), after it the new one.
 *
 * <h2>Group commit</h2>
 *
 * Appends only write to the page cache. {@link #flush} asks for every record appended so far to be
 * made durable and answers a future; one named syncer thread per log ({@code <face>-log-sync})
 * loops: it takes the number of records appended by then, fsyncs once, and completes every future
 * whose records that fsync covered, so concurrent writers share one fsync (a batch is whatever was
 * appended while the previous fsync ran). Nobody else ever waits on an fsync: a write RPC of an
 * {@code always} table answers when its future completes, on the syncer thread. Record counts are
 * logical and never go back (a rewrite keeps them), so a future registered before a rewrite is
 * completed by it (the rewritten file was fsynced whole). After a failed fsync the log is broken
 * for good: the kernel may have dropped the dirty pages and a later fsync would not say so (Linux
 * "fsyncgate"), so every waiting and later flush fails with INTERNAL.
 */
public final class OpLog implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(OpLog.class.getName());
  static final int MAX_RECORD = 64 << 20;

  /** How the syncer makes a channel durable; tests inject one that blocks or counts. */
  public interface Fsync {
    void force(FileChannel ch) throws IOException;

    Fsync DATA = ch -> ch.force(false);
  }

  private record Waiter(long upTo, CompletableFuture<Void> done) {}

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  // Guarded by this (the monitor): appends, the counts, the waiters and the channel swap.
  private volatile FileChannel channel;
  private final Path file;
  private final Fsync fsync;

  /** The face whose log this is ({@code kv}, {@code tree}): in messages and the syncer's name. */
  private final String name;

  /** Records appended since the log was opened, counting the replayed ones; never goes back. */
  private long appended;

  /** Of those, how many are known durable (the last fsync covered them). */
  private long synced;

  /** Futures of {@link #flush}, in the order of their {@code upTo} (registered in the monitor). */
  private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();

  private FerriteException broken;
  private boolean closed;

  /** Between {@link #beginRewrite} and the end of {@link #finishRewrite}; under the monitor. */
  private boolean rewriting;

  private long fsyncs;

  /**
   * Held across each fsync, and by a rewrite while it swaps the channel: an fsync never runs on a
   * channel that a rewrite is closing. Ordered before the monitor.
   */
  private final ReentrantLock forcing = new ReentrantLock();

  private final Thread syncer;

  /**
   * The log grows by zero-filled steps of this many bytes ahead of its end ({@link LogFiles}: an
   * fdatasync over zeros already on disk needs no file-system journal commit; measured here: 105 us
   * against 170 us for an append that grows the file).
   */
  static final int PREALLOCATE = LogFiles.PREALLOCATE;

  /** The logical end (bytes of whole records; the channel's position); guarded by the monitor. */
  private long end;

  /** Bytes of the file, zero-filled past {@link #end}; guarded by the monitor. */
  private long allocated;

  private OpLog(
      String name, FileChannel channel, Path file, long records, long bytes, Fsync fsync) {
    this.name = name;
    this.channel = channel;
    this.end = bytes;
    this.allocated = bytes;
    this.file = file;
    this.fsync = fsync;
    this.appended = records;
    this.synced = records;
    this.syncer = new Thread(this::syncLoop, name + "-log-sync");
    syncer.setDaemon(true);
    syncer.start();
  }

  private static Path compactFile(Path file) {
    return file.resolveSibling(file.getFileName() + ".rewrite");
  }

  /**
   * Opens (or creates) {@code file} for tests, hands every intact record to {@code replay}, in
   * order.
   */
  static OpLog open(Path file, Consumer<ByteBuffer> replay) {
    return open(file, replay, Fsync.DATA);
  }

  /** As above, with the syncer making the log durable through {@code fsync}. */
  static OpLog open(Path file, Consumer<ByteBuffer> replay, Fsync fsync) {
    return open("test", file, replay, fsync);
  }

  /**
   * Opens (or creates) the log {@code file} of face {@code name} (in messages and the syncer
   * thread's name, {@code <name>-log-sync}), hands every intact record to {@code replay}, in order;
   * the syncer makes it durable through {@code fsync}. The shared entry point of the faces that log
   * (kv, tree, tx).
   */
  public static OpLog open(String name, Path file, Consumer<ByteBuffer> replay, Fsync fsync) {
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
        try {
          replay.accept(body);
        } catch (RuntimeException refused) {
          // The face refuses to start over this record: the log stays as it is, and closed.
          try {
            ch.close();
          } catch (IOException closeFailed) {
            refused.addSuppressed(closeFailed);
          }
          throw refused;
        }
        pos += 12 + len;
        records++;
      }
      if (pos < size) {
        if (!zeros(ch, pos, size)) {
          refuseIfCorrupt(name, ch, file, pos, size, records);
          LOG.log(
              System.Logger.Level.WARNING,
              "{3} log {0}: torn record at byte {1} of {2} (no intact record follows); cut there",
              file,
              pos,
              size,
              name);
        } // else: the zero-filled space of a log that was not closed: not a tear
        ch.truncate(pos);
      }
      ch.position(pos);
      return new OpLog(name, ch, file, records, pos, fsync);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot open " + name + " log " + file, e);
    }
  }

  /**
   * Appends one record (not yet durable: see {@link #flush}); a write to the page cache, no fsync.
   */
  public synchronized void append(byte[] body) {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " is closed");
    }
    writeRecords(encode(body), 1);
  }

  /**
   * The bytes a caller leaves free at the front of a <i>framed</i> record ({@link #appendFramed}):
   * the log writes the record's length and checksum there.
   */
  public static final int FRAME = 12;

  /**
   * Appends one record whose body is {@code framed} after its first {@link #FRAME} bytes, which the
   * log fills in (length, checksum) before writing the array as it is: the body is not copied into
   * an encoded buffer first (a put's record is written from the array it was built in). As {@link
   * #append} otherwise.
   */
  public synchronized void appendFramed(byte[] framed) {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " is closed");
    }
    writeRecords(new ByteBuffer[] {frame(framed)}, 1);
  }

  /**
   * Appends every framed record of {@code framed} ({@link #appendFramed}) with one gathering write,
   * in order: one system call for a batch, and no copy of the bodies into one buffer first.
   */
  public synchronized void appendAllFramed(List<byte[]> framed) {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " is closed");
    }
    if (framed.isEmpty()) {
      return;
    }
    ByteBuffer[] records = new ByteBuffer[framed.size()];
    for (int i = 0; i < records.length; i++) {
      records[i] = frame(framed.get(i));
    }
    writeRecords(records, records.length);
  }

  /** Fills a framed record's length and checksum; the whole record, ready to write. */
  private static ByteBuffer frame(byte[] framed) {
    int body = framed.length - FRAME;
    if (body < 0 || body > MAX_RECORD) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          "framed log record of "
              + framed.length
              + " B (expected: "
              + FRAME
              + " to "
              + (FRAME + MAX_RECORD)
              + ")");
    }
    ByteBuffer b = ByteBuffer.wrap(framed).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(0, body).putLong(4, Checksum64.of(framed, FRAME, body));
    return b;
  }

  private void writeRecords(ByteBuffer records, int count) {
    writeRecords(new ByteBuffer[] {records}, count);
  }

  /**
   * Writes {@code records} ({@code count} whole records, encoded) at the log's end and counts them
   * appended; under the monitor. An interrupt pending on the caller's thread would close the
   * channel at its first write (FileChannel is interruptible), and with it the log for every other
   * writer: it is cleared for the I/O and set again after. One that lands during the write is
   * survived by reopening ({@link #reopenLocked}) and writing the same bytes at the same place.
   */
  private void writeRecords(ByteBuffer[] records, int count) {
    boolean interrupted = Thread.interrupted();
    try {
      long bytes = 0;
      for (ByteBuffer r : records) {
        bytes += r.remaining();
      }
      long next = end + bytes;
      for (int attempt = 0; ; attempt++) {
        try {
          if (next > allocated) {
            preallocate(next);
          }
          ByteBuffer[] b = new ByteBuffer[records.length];
          for (int i = 0; i < b.length; i++) {
            b[i] = records[i].duplicate();
          }
          // At the channel's position, end: a retry writes the same bytes. A gathering write
          // may write part of the buffers: write until the last one is drained.
          while (b[b.length - 1].hasRemaining()) {
            channel.write(b);
          }
          break;
        } catch (ClosedChannelException e) {
          interrupted |= Thread.interrupted();
          if (attempt >= 2) {
            throw e;
          }
          reopenLocked(e);
          channel.position(end);
        }
      }
      end = next;
    } catch (IOException e) {
      throw new FerriteException(
          ErrorCode.INTERNAL, "cannot append to " + name + " log " + file, e);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    appended += count;
  }

  /**
   * Opens the log's file again after its channel was closed under it (not by {@link #close} or a
   * rewrite): an interrupt of a thread that was writing or fsyncing it. Nothing is lost: the
   * records written through the old channel are in the file's page cache, and an fsync of any
   * descriptor of the file makes them durable. Under the monitor; the channel's position is the
   * log's end again.
   */
  private void reopenLocked(ClosedChannelException why) throws IOException {
    if (closed) {
      throw why;
    }
    if (channel.isOpen()) {
      return; // another thread reopened it already
    }
    FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
    ch.position(end);
    channel = ch;
    LOG.log(
        System.Logger.Level.WARNING,
        "{0} log {1}: its channel was closed by an interrupt ({2}); reopened at byte {3}",
        name,
        file,
        why.getClass().getSimpleName(),
        end);
  }

  /**
   * Appends {@code bodies} as consecutive records with one write (a caller that queues records and
   * appends them in batches pays one system call per batch); as {@link #append} each, in order.
   */
  public synchronized void appendAll(List<byte[]> bodies) {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " is closed");
    }
    if (bodies.isEmpty()) {
      return;
    }
    long total = 0;
    for (byte[] body : bodies) {
      if (body.length > MAX_RECORD) {
        throw new FerriteException(
            ErrorCode.INTERNAL, "log record of " + body.length + " B (max " + MAX_RECORD + ")");
      }
      total += 12 + body.length;
    }
    if (total > Integer.MAX_VALUE - 16) {
      for (byte[] body : bodies) {
        append(body); // too large for one buffer: one write each
      }
      return;
    }
    ByteBuffer b = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);
    for (byte[] body : bodies) {
      b.putInt(body.length).putLong(Checksum64.of(body)).put(body);
    }
    b.flip();
    writeRecords(b, bodies.size());
  }

  /**
   * Zero-fills the file from {@link #allocated} to at least {@code upTo} plus {@link #PREALLOCATE}
   * (positional writes: the channel's position, the log's end, stays). A page-cache write of 1 MiB
   * once per MiB of log; the next fdatasync writes it out with the records.
   */
  private void preallocate(long upTo) throws IOException {
    allocated = LogFiles.zeroFill(channel, allocated, upTo);
  }

  /**
   * Throws if an intact record follows the bad one at {@code bad} (corruption, not a torn tail):
   * reads the rest of the file, which is at most the tail since the last good record.
   */
  private static void refuseIfCorrupt(
      String name, FileChannel ch, Path file, long bad, long size, long good) throws IOException {
    if (size - bad > Integer.MAX_VALUE - 16) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          name
              + " log "
              + file
              + ": bad record at offset "
              + bad
              + " and "
              + (size - bad)
              + " bytes after");
    }
    ByteBuffer rest = ByteBuffer.allocate((int) (size - bad));
    while (rest.hasRemaining() && ch.read(rest, bad + rest.position()) > 0) {
      // read it all
    }
    byte[] all = rest.array();
    ByteBuffer le = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    long next =
        LogFiles.nextRecord(
            all,
            0,
            12,
            MAX_RECORD,
            (log, off, len) -> Checksum64.of(log, off + 12, len) == le.getLong(off + 4));
    if (next >= 0) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          name
              + " log "
              + file
              + " is corrupt at offset "
              + bad
              + " (after "
              + good
              + " good records): "
              + (next > 0
                  ? "an intact record follows at offset " + (bad + next)
                  : "too much follows to check")
              + ", so this is not a torn tail. The server will not start and drop acknowledged"
              + " writes silently. Restore the file from a copy, or cut it at the bad record"
              + " (`truncate -s "
              + bad
              + " "
              + file
              + "`; the writes from there on are lost), or move it aside (every write of the"
              + " server's durable data is lost).");
    }
  }

  /** Whether bytes {@code from} to {@code to} of {@code ch} are all zero (preallocated space). */
  private static boolean zeros(FileChannel ch, long from, long to) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(64 << 10);
    for (long at = from; at < to; ) {
      b.clear();
      b.limit((int) Math.min(b.capacity(), to - at));
      int n = ch.read(b, at);
      if (n <= 0) {
        return false;
      }
      for (int i = 0; i < n; i++) {
        if (b.get(i) != 0) {
          return false;
        }
      }
      at += n;
    }
    return true;
  }

  /** One record: length, XXH3-64 of the body, the body. */
  private static ByteBuffer encode(byte[] body) {
    if (body.length > MAX_RECORD) {
      throw new FerriteException(
          ErrorCode.INTERNAL, "log record of " + body.length + " B (max " + MAX_RECORD + ")");
    }
    ByteBuffer b = ByteBuffer.allocate(12 + body.length).order(ByteOrder.LITTLE_ENDIAN);
    return b.putInt(body.length).putLong(Checksum64.of(body)).put(body).flip();
  }

  private static void write(FileChannel ch, byte[] body) throws IOException {
    ByteBuffer b = encode(body);
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  /** The log's size in bytes. */
  public synchronized long bytes() {
    return end;
  }

  /**
   * Replaces the log by the records {@code snapshot} hands to its sink, in order (see the class
   * comment): {@link #beginRewrite} then {@link #finishRewrite}, for a caller that keeps appends
   * out the whole time (the records must rebuild what the old log did). On failure the old log
   * stays in use and the partial new one is deleted.
   */
  public void rewrite(Consumer<Consumer<byte[]>> snapshot) {
    finishRewrite(beginRewrite(snapshot));
  }

  /**
   * A rewrite begun by {@link #beginRewrite}: its snapshot written to {@code <file>.rewrite} (not
   * yet fsynced), and where the live log stood when it was taken.
   */
  public final class Rewrite {
    private final Path tmp;
    private FileChannel fresh;
    private final long records;

    /** Bytes of the live log already in {@link #fresh} after the snapshot: from its end then. */
    private long copied;

    private Rewrite(Path tmp, FileChannel fresh, long from, long records) {
      this.tmp = tmp;
      this.fresh = fresh;
      this.copied = from;
      this.records = records;
    }

    /** Records of the snapshot. */
    public long records() {
      return records;
    }
  }

  /**
   * The first half of a rewrite that does not stop appends while it fsyncs: writes the records
   * {@code snapshot} hands to its sink to {@code <file>.rewrite} (the page cache only) and notes
   * the log's end. The caller holds what keeps anything from being appended meanwhile, and the
   * records must rebuild what the log did up to now; it may let appends go on once this returns,
   * and then calls {@link #finishRewrite}. One rewrite at a time.
   */
  public Rewrite beginRewrite(Consumer<Consumer<byte[]>> snapshot) {
    long from;
    synchronized (this) {
      if (closed) {
        throw new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " is closed");
      }
      if (rewriting) {
        throw rewriteRuns();
      }
      rewriting = true;
      from = end;
    }
    Path tmp = compactFile(file);
    FileChannel fresh = null;
    try {
      fresh = openFresh(tmp);
      long records = writeSnapshot(fresh, tmp, snapshot);
      Rewrite r = new Rewrite(tmp, fresh, from, records);
      fresh = null;
      return r;
    } catch (IOException | RuntimeException e) {
      abandon(tmp, fresh);
      synchronized (this) {
        rewriting = false;
      }
      if (e instanceof RuntimeException r) {
        throw r; // the snapshot's own failure, as it is
      }
      throw new FerriteException(ErrorCode.INTERNAL, "cannot compact " + name + " log " + file, e);
    }
  }

  /**
   * The second half of {@link #beginRewrite}: fsyncs the snapshot and copies after it what was
   * appended to the log since (both while appends go on), then, holding appends and the syncer for
   * the last records only, copies those, fsyncs, and renames the new file over the log (the
   * directory fsynced): the new log holds the snapshot and every record appended after it, in
   * order, and every waiter is covered. On failure the old log stays in use and the partial new one
   * is deleted.
   */
  public void finishRewrite(Rewrite r) {
    List<Waiter> covered = null;
    try (FileChannel live = FileChannel.open(file, StandardOpenOption.READ)) {
      // A channel of its own for reading the live log: an interrupt of this thread closes this
      // one, never the log's.
      r.fresh.force(true);
      r.copied = copy(live, r.copied, bytes(), r.fresh);
      r.fresh.force(false);
      forcing.lock();
      try {
        synchronized (this) {
          if (closed) {
            throw new FerriteException(
                ErrorCode.UNAVAILABLE, name + " log " + file + " closed during a rewrite");
          }
          r.copied = copy(live, r.copied, end, r.fresh);
          r.fresh.force(true);
          covered = swapLocked(r.tmp, r.fresh);
          r.fresh = null;
        }
      } finally {
        forcing.unlock();
      }
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot compact " + name + " log " + file, e);
    } finally {
      abandon(r.tmp, r.fresh);
      synchronized (this) {
        rewriting = false;
      }
    }
    complete(covered, null);
  }

  /** The new log's file, created empty (a stale one from a crash is overwritten). */
  private static FileChannel openFresh(Path tmp) throws IOException {
    return FileChannel.open(
        tmp,
        StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING,
        StandardOpenOption.READ,
        StandardOpenOption.WRITE);
  }

  private FerriteException rewriteRuns() {
    return new FerriteException(ErrorCode.CONFLICT, name + " log " + file + ": a rewrite runs");
  }

  /** Copies {@code [from, to)} of {@code src} to the end of {@code dst}; returns {@code to}. */
  private static long copy(FileChannel src, long from, long to, FileChannel dst)
      throws IOException {
    long at = from;
    while (at < to) {
      long n = src.transferTo(at, to - at, dst);
      if (n <= 0) {
        throw new IOException("copied nothing at " + at + " of " + to);
      }
      at += n;
    }
    return to;
  }

  /** Bytes of records a snapshot gathers before one write: one system call, not one a record. */
  static final int SNAPSHOT_BUFFER = 1 << 20;

  /**
   * Writes the records {@code snapshot} hands to its sink to {@code out}, gathered into writes of
   * up to {@link #SNAPSHOT_BUFFER} bytes (a record larger than that in its own write); returns how
   * many.
   */
  private long writeSnapshot(FileChannel out, Path tmp, Consumer<Consumer<byte[]>> snapshot) {
    long[] records = new long[1];
    ByteBuffer buf = ByteBuffer.allocateDirect(SNAPSHOT_BUFFER).order(ByteOrder.LITTLE_ENDIAN);
    try {
      snapshot.accept(
          body -> {
            try {
              if (buf.remaining() < FRAME + body.length) {
                drain(out, buf);
              }
              if (buf.remaining() < FRAME + body.length) {
                write(out, body); // larger than the buffer (encode checks MAX_RECORD)
              } else {
                buf.putInt(body.length).putLong(Checksum64.of(body)).put(body);
              }
            } catch (IOException e) {
              throw new FerriteException(ErrorCode.INTERNAL, "cannot write " + tmp, e);
            }
            records[0]++;
          });
      drain(out, buf);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot write " + tmp, e);
    }
    return records[0];
  }

  /** Writes what {@code buf} holds to {@code out} and empties it. */
  private static void drain(FileChannel out, ByteBuffer buf) throws IOException {
    buf.flip();
    while (buf.hasRemaining()) {
      out.write(buf);
    }
    buf.clear();
  }

  /**
   * Under {@link #forcing} and the monitor: {@code fresh}, fsynced and holding every record, takes
   * the log's place. Returns the waiters it covers.
   */
  private List<Waiter> swapLocked(Path tmp, FileChannel fresh) throws IOException {
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    syncDirectory(file.toAbsolutePath().getParent());
    FileChannel old = channel;
    channel = fresh;
    end = fresh.size();
    allocated = end;
    fresh.position(end);
    // The new file holds everything appended so far, fsynced: every waiter is covered. The
    // logical count stays (the waiters' marks are in it).
    synced = appended;
    try {
      old.close();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "closing the replaced " + name + " log " + file, e);
    }
    return takeCovered(synced);
  }

  private void abandon(Path tmp, FileChannel fresh) {
    if (fresh != null) {
      try {
        fresh.close();
        Files.deleteIfExists(tmp);
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "removing " + tmp, e);
      }
    }
  }

  private static void syncDirectory(Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    }
  }

  /**
   * A future completed once every record appended before this call is durable (one fsync of the
   * syncer covers it; already complete when nothing is new), or failed with INTERNAL if the log
   * could not be made durable. Never blocks.
   */
  public synchronized CompletableFuture<Void> flush() {
    if (broken != null) {
      return CompletableFuture.failedFuture(broken);
    }
    if (synced >= appended) {
      return DONE;
    }
    if (closed) {
      return CompletableFuture.failedFuture(
          new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " is closed"));
    }
    CompletableFuture<Void> f = new CompletableFuture<>();
    boolean wake = waiters.isEmpty();
    waiters.addLast(new Waiter(appended, f));
    if (wake) {
      notifyAll(); // the syncer sleeps only while there is no waiter
    }
    return f;
  }

  /** Makes every record appended so far durable, waiting for the syncer (not on fabric threads). */
  public void sync() {
    try {
      flush().join();
    } catch (java.util.concurrent.CompletionException e) {
      throw FerriteException.unwrap(e);
    }
  }

  /** Records appended since the log was opened (replayed ones included). */
  public synchronized long appended() {
    return appended;
  }

  /** How many fsyncs the syncer made (for tests: group commit shares them). */
  public synchronized long fsyncs() {
    return fsyncs;
  }

  /**
   * The syncer: sleeps until a flush waits, fsyncs what was appended by then, completes the futures
   * that fsync covered (outside the monitor: completing one sends its answer), and starts again
   * with whatever was appended meanwhile: the next batch.
   */
  private void syncLoop() {
    while (true) {
      long target;
      synchronized (this) {
        while (!closed && (waiters.isEmpty() || broken != null)) {
          try {
            wait();
          } catch (InterruptedException e) {
            // Only close() stops the syncer: it sets closed first.
          }
        }
        if (waiters.isEmpty() || broken != null) {
          return; // closed, and nobody waits
        }
        target = appended;
      }
      FerriteException failed = null;
      forcing.lock();
      try {
        // The channel read under the lock a rewrite swaps it under; records up to target were
        // written to it (appends write before they count), or the rewrite covered them.
        try {
          fsync.force(channel);
        } catch (ClosedChannelException e) {
          // Closed under it by an appender's interrupt (not by close: it waits for this thread;
          // nor by a rewrite: it holds forcing): fsync the reopened file (same inode, same pages).
          synchronized (this) {
            reopenLocked(e);
          }
          fsync.force(channel);
        }
      } catch (IOException | RuntimeException e) {
        failed =
            new FerriteException(ErrorCode.INTERNAL, "cannot fsync " + name + " log " + file, e);
        LOG.log(
            System.Logger.Level.ERROR, name + " log fsync failed; the log refuses writes now", e);
      } finally {
        forcing.unlock();
      }
      List<Waiter> done;
      synchronized (this) {
        fsyncs++;
        if (failed != null) {
          broken = failed;
          done = new ArrayList<>(waiters);
          waiters.clear();
        } else {
          synced = Math.max(synced, target);
          done = takeCovered(synced);
        }
      }
      complete(done, failed);
    }
  }

  /** Removes and returns the waiters whose records are within the first {@code durable}. */
  private List<Waiter> takeCovered(long durable) {
    List<Waiter> out = new ArrayList<>();
    while (!waiters.isEmpty() && waiters.peekFirst().upTo() <= durable) {
      out.add(waiters.pollFirst());
    }
    return out;
  }

  private static void complete(List<Waiter> done, FerriteException failed) {
    for (Waiter w : done) {
      if (failed == null) {
        w.done().complete(null);
      } else {
        w.done().completeExceptionally(failed);
      }
    }
  }

  @Override
  public void close() {
    try {
      sync();
    } catch (FerriteException e) {
      LOG.log(System.Logger.Level.WARNING, "closing " + name + " log " + file, e);
    }
    List<Waiter> left;
    synchronized (this) {
      closed = true;
      notifyAll();
      left = new ArrayList<>(waiters);
      waiters.clear();
    }
    complete(left, new FerriteException(ErrorCode.UNAVAILABLE, name + " log " + file + " closed"));
    try {
      syncer.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      synchronized (this) {
        channel.truncate(end); // the zero-filled space goes: a closed log ends at its last record
      }
      channel.close();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "closing " + name + " log " + file, e);
    }
  }
}
