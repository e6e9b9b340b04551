package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.proto.Wire;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * The master's write-ahead journal: an append-only log of {@link MasterEvent}s plus a periodic
 * snapshot, in one directory.
 *
 * <pre>
 * dir/snapshot-GGGGGGGGGGGGGGGG   the whole state as events, generation G (hex), written to a
 *                                 temp file, fsynced, then renamed into place (atomic)
 * dir/log-GGGGGGGGGGGGGGGG        the events after snapshot G, appended and fsynced per group
 *
 * file   = header | record*
 * header = magic u32 "FJNL" | version u16 | kind u16 (1 snapshot, 2 log) | generation u64
 * record = bodyLength u32 | checksum u64 | body
 *          checksum = XXH3-64 (Checksum64) of bodyLength (4 bytes LE) followed by body
 * body   = eventCount i32 | { eventLength i32 | event (MasterEvent encoding) }*
 * </pre>
 *
 * One record holds the events of one mutation (a group), so a mutation is recovered whole or not at
 * all. A snapshot writes one event per record.
 *
 * <p>Recovery loads the newest snapshot, then replays its log. A record whose length runs past the
 * end of the file, or whose checksum does not match (a crash in the middle of a write), ends the
 * log: it and everything after it are dropped with a warning and the file is truncated there, so
 * new records follow the last good one. A generation 0 with no snapshot is an empty state.
 *
 * <p>A snapshot writes generation G+1 while appends are blocked (the caller holds the state lock),
 * then starts log G+1 and deletes generation G. A crash at any point leaves either G (snapshot and
 * log) or G+1 complete; leftovers of the other are removed at the next open.
 *
 * <p>Not thread-safe: the master calls it under its state lock.
 */
final class Journal implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Journal.class.getName());

  static final int MAGIC = 0x4C4E4A46; // "FJNL" little-endian
  static final int VERSION = 1;
  static final int KIND_SNAPSHOT = 1;
  static final int KIND_LOG = 2;
  static final int HEADER = 16;
  static final int RECORD_HEADER = 12;
  static final int MAX_RECORD = 64 << 20;

  private final Path dir;
  private final boolean fsync;
  private long generation;
  private FileChannel log;
  private int recordsSinceSnapshot;

  /** What {@link #open} found. */
  record Recovery(long generation, int snapshotRecords, int logRecords, long droppedBytes) {}

  private Recovery recovery;

  private Journal(Path dir, boolean fsync) {
    this.dir = dir;
    this.fsync = fsync;
  }

  /**
   * Opens (or creates) the journal in {@code dir}, feeding every recovered event to {@code replay}
   * in order, and readies it for appends.
   */
  static Journal open(Path dir, boolean fsync, Consumer<MasterEvent> replay) {
    Journal j = new Journal(dir, fsync);
    try {
      Secrets.createPrivateDirectories(dir);
      j.recover(replay);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the master journal in " + dir, e);
    }
    return j;
  }

  Recovery recovery() {
    return recovery;
  }

  long generation() {
    return generation;
  }

  int recordsSinceSnapshot() {
    return recordsSinceSnapshot;
  }

  Path logFile() {
    return file("log", generation);
  }

  private Path file(String kind, long gen) {
    return dir.resolve(kind + "-" + String.format(Locale.ROOT, "%016x", gen));
  }

  private List<Long> generations(String kind) throws IOException {
    List<Long> gens = new ArrayList<>();
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        String n = p.getFileName().toString();
        if (n.startsWith(kind + "-") && n.length() == kind.length() + 17) {
          try {
            gens.add(Long.parseUnsignedLong(n.substring(kind.length() + 1), 16));
          } catch (NumberFormatException e) {
            // Not one of ours.
          }
        }
      }
    }
    gens.sort(null);
    return gens;
  }

  private void recover(Consumer<MasterEvent> replay) throws IOException {
    List<Long> snaps = generations("snapshot");
    generation = snaps.isEmpty() ? 0 : snaps.get(snaps.size() - 1);
    int snapRecords = 0;
    if (!snaps.isEmpty()) {
      Path snap = file("snapshot", generation);
      ReadResult r = readFile(snap, KIND_SNAPSHOT, replay);
      if (r.droppedBytes > 0) {
        // Snapshots are renamed into place only after fsync: damage here is media corruption.
        LOG.log(
            System.Logger.Level.ERROR,
            "snapshot {0} is damaged after {1} records; metadata after that point is lost",
            snap,
            r.records);
      }
      snapRecords = r.records;
    }
    Path logPath = file("log", generation);
    int logRecords = 0;
    long dropped = 0;
    if (Files.exists(logPath)) {
      ReadResult r = readFile(logPath, KIND_LOG, replay);
      logRecords = r.records;
      dropped = r.droppedBytes;
      if (dropped > 0) {
        LOG.log(
            System.Logger.Level.WARNING,
            "journal {0}: ignoring a torn or corrupt tail of {1} bytes after {2} good records"
                + " (a crash during a write); truncating",
            logPath,
            dropped,
            logRecords);
        try (FileChannel ch = FileChannel.open(logPath, StandardOpenOption.WRITE)) {
          ch.truncate(r.goodLength);
          ch.force(true);
        }
      }
    }
    // Remove what an interrupted snapshot left: older generations and temp files.
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        String n = p.getFileName().toString();
        boolean current = p.equals(logPath) || p.equals(file("snapshot", generation));
        if (!current && (n.startsWith("log-") || n.startsWith("snapshot-") || n.endsWith(".tmp"))) {
          Files.deleteIfExists(p);
        }
      }
    }
    openLog(logPath);
    recordsSinceSnapshot = logRecords;
    recovery = new Recovery(generation, snapRecords, logRecords, dropped);
    LOG.log(
        System.Logger.Level.INFO,
        "journal {0}: generation {1}, {2} snapshot + {3} log records recovered",
        dir,
        generation,
        snapRecords,
        logRecords);
  }

  private record ReadResult(int records, long goodLength, long droppedBytes) {}

  private static ReadResult readFile(Path file, int kind, Consumer<MasterEvent> replay)
      throws IOException {
    byte[] all = Files.readAllBytes(file);
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    if (all.length < HEADER) {
      return new ReadResult(0, 0, all.length);
    }
    int magic = b.getInt();
    int version = b.getShort() & 0xFFFF;
    int k = b.getShort() & 0xFFFF;
    b.getLong();
    if (magic != MAGIC || version != VERSION || k != kind) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          file
              + " is not a Ferrite journal file of kind "
              + kind
              + " version "
              + VERSION
              + " (magic "
              + Integer.toHexString(magic)
              + ", version "
              + version
              + ", kind "
              + k
              + ")");
    }
    int records = 0;
    long good = b.position();
    while (b.remaining() >= RECORD_HEADER) {
      int start = b.position();
      int len = b.getInt();
      long sum = b.getLong();
      if (len < 1 || len > MAX_RECORD || len > b.remaining()) {
        break;
      }
      long actual = checksum(all, start, len);
      if (actual != sum) {
        break;
      }
      List<MasterEvent> group = new ArrayList<>();
      try {
        Wire.Reader r = new Wire.Reader(ByteBuffer.wrap(all, b.position(), len), "journal record");
        int n = r.count("eventCount", len);
        for (int i = 0; i < n; i++) {
          byte[] ev = r.bytes("event");
          group.add(MasterEvent.decode(new Wire.Reader(ByteBuffer.wrap(ev), "journal event")));
        }
        r.end();
      } catch (FerriteException ex) {
        // A record with a good checksum that does not decode was written by a newer master.
        throw new FerriteException(
            ErrorCode.INTERNAL,
            file + ": record " + records + " does not decode: " + ex.detail(),
            ex);
      }
      b.position(b.position() + len);
      group.forEach(replay);
      records++;
      good = b.position();
    }
    return new ReadResult(records, good, all.length - good);
  }

  /** XXH3-64 over the length field and the body, so a corrupt length is caught too. */
  private static long checksum(byte[] buf, int recordStart, int len) {
    ByteBuffer b = ByteBuffer.allocate(4 + len).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(len).put(buf, recordStart + RECORD_HEADER, len);
    return Checksum64.of(b.array(), 0, 4 + len);
  }

  private static ByteBuffer header(int kind, long gen) {
    ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(MAGIC).putShort((short) VERSION).putShort((short) kind).putLong(gen).flip();
    return h;
  }

  private static void writeRecords(FileChannel ch, List<List<MasterEvent>> groups)
      throws IOException {
    for (List<MasterEvent> g : groups) {
      Wire.Writer w = new Wire.Writer(64 * g.size()).i32(g.size());
      for (MasterEvent e : g) {
        w.bytes(MasterEvent.encode(e));
      }
      byte[] body = w.toArray();
      ByteBuffer rec =
          ByteBuffer.allocate(RECORD_HEADER + body.length).order(ByteOrder.LITTLE_ENDIAN);
      rec.putInt(body.length).putLong(0).put(body);
      long sum = checksum(rec.array(), 0, body.length);
      rec.putLong(4, sum).flip();
      while (rec.hasRemaining()) {
        ch.write(rec);
      }
    }
  }

  private void openLog(Path logPath) throws IOException {
    boolean fresh = !Files.exists(logPath) || Files.size(logPath) < HEADER;
    log =
        FileChannel.open(
            logPath, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
    if (fresh) {
      log.truncate(0);
      ByteBuffer h = header(KIND_LOG, generation);
      while (h.hasRemaining()) {
        log.write(h);
      }
      log.force(true);
      syncDirectory();
    }
    log.position(log.size());
  }

  /** Makes renames and new files in the journal directory durable (Linux: fsync the dir). */
  private void syncDirectory() throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException | UnsupportedOperationException e) {
      if (fsync) {
        LOG.log(System.Logger.Level.DEBUG, "cannot fsync directory {0}: {1}", dir, e);
      }
    }
  }

  /** Appends {@code events} as one group and (if configured) fsyncs once. */
  void append(List<MasterEvent> events) {
    long start = -1;
    try {
      start = log.position();
      writeRecords(log, List.of(events));
      if (fsync) {
        log.force(false);
      }
      recordsSinceSnapshot += events.size();
    } catch (IOException e) {
      // Cut off a partial group so that later appends do not follow garbage.
      try {
        if (start >= 0) {
          log.truncate(start);
          log.position(start);
        }
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new FerriteException(
          ErrorCode.INTERNAL, "cannot append to the master journal " + logFile(), e);
    }
  }

  /** Writes {@code state} (from {@link MasterState#snapshotEvents}) as generation + 1. */
  void snapshot(List<MasterEvent> state) {
    long next = generation + 1;
    Path snap = file("snapshot", next);
    Path tmp = dir.resolve(snap.getFileName() + ".tmp");
    try {
      try (FileChannel ch =
          FileChannel.open(
              tmp,
              StandardOpenOption.CREATE,
              StandardOpenOption.TRUNCATE_EXISTING,
              StandardOpenOption.WRITE)) {
        ByteBuffer h = header(KIND_SNAPSHOT, next);
        while (h.hasRemaining()) {
          ch.write(h);
        }
        List<List<MasterEvent>> one = new ArrayList<>(state.size());
        for (MasterEvent e : state) {
          one.add(List.of(e));
        }
        writeRecords(ch, one);
        ch.force(true);
      }
      Files.move(tmp, snap, StandardCopyOption.ATOMIC_MOVE);
      syncDirectory();
      // From here on generation `next` is the recovery point.
      Path oldLog = logFile();
      Path oldSnap = file("snapshot", generation);
      log.close();
      generation = next;
      openLog(logFile());
      Files.deleteIfExists(oldLog);
      Files.deleteIfExists(oldSnap);
      recordsSinceSnapshot = 0;
      LOG.log(
          System.Logger.Level.INFO,
          "journal snapshot {0}: {1} records",
          snap.getFileName(),
          state.size());
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot write journal snapshot " + snap, e);
    }
  }

  @Override
  public void close() {
    try {
      if (log != null && log.isOpen()) {
        log.force(true);
        log.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot close the master journal " + logFile(), e);
    }
  }
}
