package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.log.LogFiles;
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
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * The master's write-ahead journal: an append-only log of {@link MasterEvent}s plus a periodic
 * snapshot, in one directory.
 *
 * <pre>
 * dir/snapshot-GGGGGGGGGGGGGGGG   the whole state as events, generation G (hex), written to a
 *                                 temp file, fsynced, then renamed into place (atomic)
 * dir/log-GGGGGGGGGGGGGGGG        the events after snapshot G, appended one record per group,
 *                                 fsynced by the journal thread per batch of records
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
 * end of the file, or whose checksum does not match, ends the log. What follows it decides what it
 * was: only bad bytes and zeros to the end of the file (a crash in the middle of the last writes;
 * the zeros are the log's preallocation) is a <em>torn tail</em>: it is dropped with a warning and
 * the file is truncated there, so new records follow the last good one. A valid record anywhere
 * after the bad one is <em>corruption</em> (media, or someone's editor): dropping the tail would
 * silently lose records that were fsynced and acknowledged, so recovery refuses ({@link
 * JournalCorruptException}, naming the file and the offset) until an operator asks for {@link
 * #repair} ({@code ferrite master --repair-journal}). A damaged snapshot is always corruption
 * (snapshots are renamed into place only after an fsync). A generation 0 with no snapshot is an
 * empty state.
 *
 * <p>A snapshot is taken in two steps. Under the state lock, {@link #rotate} starts log G+1 (a new
 * file, not fsynced there: the journal thread fsyncs the old log's tail, the new log and the
 * directory with its next batch) and the caller copies the state as events. Outside the lock,
 * {@link #writeSnapshot} writes snapshot G+1 (temp file, fsync, atomic rename, directory fsync) and
 * deletes the older generations. Recovery loads the newest snapshot S and replays the chain of logs
 * S, S+1, ... that follow it, so a crash between the steps (snapshot G, logs G and G+1) loses
 * nothing; a torn log ends the chain (later logs are dropped: they would follow a gap).
 *
 * <p><b>Group commit</b> ({@link GroupCommit}). {@link #append} writes the record into the log file
 * (the page cache: a {@code write}, about a microsecond) and numbers it (its LSN); it does not
 * fsync. The journal thread fsyncs batches and completes {@link #whenDurable}. The master's
 * metadata lock is held only across the {@code write}. An fsync that fails stops the journal for
 * good ({@link #failure}): later appends and snapshots are refused, so the master accepts no more
 * mutations until it is restarted; recovery then keeps whatever reached the disk (unacknowledged
 * records may or may not be there, like a call that timed out).
 *
 * <p>Thread-safety: {@link #append} and {@link #rotate} are called under the master's state lock
 * (one at a time), {@link #writeSnapshot} outside it (one at a time); {@link #writtenLsn}, {@link
 * #durableLsn}, {@link #whenDurable} and {@link #stats} from any thread.
 */
final class Journal implements AutoCloseable, Durability {
  private static final System.Logger LOG = System.getLogger(Journal.class.getName());

  static final int MAGIC = 0x4C4E4A46; // "FJNL" little-endian
  static final int VERSION = 1;
  static final int KIND_SNAPSHOT = 1;
  static final int KIND_LOG = 2;
  static final int HEADER = 16;
  static final int RECORD_HEADER = 12;
  static final int MAX_RECORD = 64 << 20;

  /**
   * How the journal makes its log durable: {@link #FORCE} ({@code fdatasync}) in production; tests
   * inject one that blocks or fails (a wrapper, not a mock).
   */
  @FunctionalInterface
  interface Fsync {
    void force(FileChannel log) throws IOException;
  }

  /** {@code FileChannel.force(false)}: the data and the size, not the timestamps. */
  static final Fsync FORCE = ch -> ch.force(false);

  private final Path dir;
  private final boolean fsync;
  private final Fsync fsyncer;
  private long generation;

  /**
   * The current log: written by appenders and replaced by {@link #rotate}, under the state lock.
   */
  private FileChannel log;

  private int recordsSinceSnapshot;

  /** One snapshot at a time ({@link #writeSnapshot} runs outside the state lock). */
  private final Object snapshotLock = new Object();

  /** Set once the log is open, after recovery. */
  private GroupCommit commit;

  /** What {@link #open} found. */
  record Recovery(long generation, int snapshotRecords, int logRecords, long droppedBytes) {}

  private Recovery recovery;

  private Journal(Path dir, boolean fsync, Fsync fsyncer) {
    this.dir = dir;
    this.fsync = fsync;
    this.fsyncer = Objects.requireNonNull(fsyncer);
  }

  /**
   * Opens (or creates) the journal in {@code dir}, feeding every recovered event to {@code replay}
   * in order, and readies it for appends.
   */
  static Journal open(Path dir, boolean fsync, Consumer<MasterEvent> replay) {
    return open(dir, fsync, FORCE, replay);
  }

  /** As {@link #open(Path, boolean, Consumer)}, fsyncing the log with {@code fsyncer}. */
  static Journal open(Path dir, boolean fsync, Fsync fsyncer, Consumer<MasterEvent> replay) {
    Journal j = new Journal(dir, fsync, fsyncer);
    try {
      Secrets.createPrivateDirectories(dir);
      j.recover(replay);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the master journal in " + dir, e);
    }
    j.commit =
        new GroupCommit(
            j.log, fsync, fsyncer, j::syncDirectory, () -> j.logFile().getFileName().toString());
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
        // Snapshots are renamed into place only after fsync: damage here is media corruption,
        // whether or not valid records follow.
        throw new JournalCorruptException(snap, r.goodLength, r.records, r.nextValid);
      }
      snapRecords = r.records;
    }
    // The logs from the snapshot's generation on, in order, as long as each follows the last.
    long snapGen = generation;
    int logRecords = 0;
    long dropped = 0;
    Path logPath = file("log", generation);
    for (long gen = snapGen; Files.exists(file("log", gen)); gen++) {
      logPath = file("log", gen);
      generation = gen;
      ReadResult r = readFile(logPath, KIND_LOG, replay);
      logRecords += r.records;
      if (r.nextValid >= 0) {
        throw new JournalCorruptException(logPath, r.goodLength, r.records, r.nextValid);
      }
      if (r.droppedBytes > 0) {
        dropped = r.droppedBytes;
        LOG.log(
            System.Logger.Level.WARNING,
            "journal {0}: ignoring a torn tail of {1} bytes after {2} good records (a crash"
                + " during a write: no valid record follows); truncating",
            logPath,
            dropped,
            r.records);
        try (FileChannel ch = FileChannel.open(logPath, StandardOpenOption.WRITE)) {
          ch.truncate(r.goodLength);
          ch.force(true);
        }
        break; // a later log would follow a gap: dropped below
      }
      if (r.zeroTail) {
        // The preallocated space of a log that was not closed: not a tear; cut, no warning.
        try (FileChannel ch = FileChannel.open(logPath, StandardOpenOption.WRITE)) {
          ch.truncate(r.goodLength);
        }
      }
    }
    long lastGen = generation;
    // Remove what an interrupted snapshot left (older generations, temp files) and logs after a
    // torn one.
    java.util.Set<Path> keep = new java.util.HashSet<>();
    keep.add(file("snapshot", snapGen));
    for (long g = snapGen; g <= lastGen; g++) {
      keep.add(file("log", g));
    }
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        String n = p.getFileName().toString();
        if (!keep.contains(p)
            && (n.startsWith("log-") || n.startsWith("snapshot-") || n.endsWith(".tmp"))) {
          Files.deleteIfExists(p);
        }
      }
    }
    openLog(logPath);
    recordsSinceSnapshot = logRecords;
    recovery = new Recovery(snapGen, snapRecords, logRecords, dropped);
    LOG.log(
        System.Logger.Level.INFO,
        "journal {0}: generation {1}, {2} snapshot + {3} log records recovered",
        dir,
        generation,
        snapRecords,
        logRecords);
  }

  /**
   * What reading a file found: {@code goodLength} bytes of header and whole records, then {@code
   * droppedBytes} of a torn or corrupt tail, or ({@code zeroTail}) only zeros: the preallocated
   * space of a log (see {@link #PREALLOCATE}), which is a clean end, not a tear.
   */
  private record ReadResult(
      int records, long goodLength, long droppedBytes, boolean zeroTail, long nextValid) {}

  private static ReadResult readFile(Path file, int kind, Consumer<MasterEvent> replay)
      throws IOException {
    byte[] all = Files.readAllBytes(file);
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    if (all.length < HEADER) {
      return new ReadResult(0, 0, all.length, false, -1);
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
    boolean zeros = true;
    for (int i = (int) good; i < all.length && zeros; i++) {
      zeros = all[i] == 0;
    }
    return zeros
        ? new ReadResult(records, good, 0, good < all.length, -1)
        : new ReadResult(records, good, all.length - good, false, nextValid(all, (int) good));
  }

  /**
   * The offset of the first valid record after the bad one at {@code bad}, or -1: see {@link
   * LogFiles#nextRecord}.
   */
  static long nextValid(byte[] all, int bad) {
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    return LogFiles.nextRecord(
        all,
        bad,
        RECORD_HEADER,
        MAX_RECORD,
        (log, off, len) -> checksum(log, off, len) == b.getLong(off + 4));
  }

  /** Valid records in {@code all} walking from {@code from} (for what a repair drops). */
  private static int recordsFrom(byte[] all, long from) {
    ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    int n = 0;
    int off = (int) from;
    while (off + RECORD_HEADER <= all.length) {
      int len = b.getInt(off);
      if (len < 1 || len > MAX_RECORD || len > all.length - off - RECORD_HEADER) {
        break;
      }
      if (checksum(all, off, len) != b.getLong(off + 4)) {
        break;
      }
      n++;
      off += RECORD_HEADER + len;
    }
    return n;
  }

  /**
   * Repairs a corrupt journal in {@code dir} as an operator asked ({@code ferrite master
   * --repair-journal}): truncates the newest snapshot or the first log of its chain at its first
   * bad record if valid records follow it (what {@link #open} refuses), and says what it dropped,
   * one line per file cut; an empty list if there was nothing to repair. The master is not running:
   * it holds the journal while it runs. Records after the cut are lost for good (as are later logs,
   * which would follow a gap); the master recovers what precedes it.
   */
  static List<String> repair(Path dir) throws IOException {
    List<String> done = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return done;
    }
    Journal j = new Journal(dir, false, FORCE);
    List<Long> snaps = j.generations("snapshot");
    long gen = snaps.isEmpty() ? 0 : snaps.get(snaps.size() - 1);
    List<Path> chain = new ArrayList<>();
    if (!snaps.isEmpty()) {
      chain.add(j.file("snapshot", gen));
    }
    for (long g = gen; Files.exists(j.file("log", g)); g++) {
      chain.add(j.file("log", g));
    }
    for (Path p : chain) {
      int kind = p.getFileName().toString().startsWith("snapshot-") ? KIND_SNAPSHOT : KIND_LOG;
      ReadResult r = readFile(p, kind, e -> {});
      boolean corrupt = kind == KIND_SNAPSHOT ? r.droppedBytes > 0 : r.nextValid >= 0;
      if (!corrupt) {
        if (r.droppedBytes > 0) {
          break; // a torn tail: open cuts it as usual, and the chain ends there
        }
        continue;
      }
      byte[] all = Files.readAllBytes(p);
      int lost = r.nextValid > r.goodLength ? recordsFrom(all, r.nextValid) : 0;
      try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
        ch.truncate(r.goodLength);
        ch.force(true);
      }
      done.add(
          String.format(
              Locale.ROOT,
              "%s: kept %d records, truncated at offset %d, dropped %d bytes (the bad record, then"
                  + " at least %d valid records from offset %d)",
              p,
              r.records,
              r.goodLength,
              all.length - r.goodLength,
              lost,
              r.nextValid));
      LOG.log(System.Logger.Level.WARNING, "journal repaired: " + done.get(done.size() - 1));
      break; // later logs follow the cut: open drops them
    }
    return done;
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

  /**
   * One group of events as a record body ({@code eventCount i32 | (eventLength i32 | event)*}):
   * what a log record holds, and what a master group's Raft log entry carries ({@link
   * RaftJournal}).
   */
  static byte[] encodeGroup(List<MasterEvent> group) {
    Wire.Writer w = new Wire.Writer(64 * group.size()).i32(group.size());
    for (MasterEvent e : group) {
      w.bytes(MasterEvent.encode(e));
    }
    return w.toArray();
  }

  /** The events of a record body written by {@link #encodeGroup}; {@code what} names it. */
  static List<MasterEvent> decodeGroup(ByteBuffer body, String what) {
    Wire.Reader r = new Wire.Reader(body, what);
    int n = r.count("eventCount", body.remaining());
    List<MasterEvent> group = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      byte[] ev = r.bytes("event");
      group.add(MasterEvent.decode(new Wire.Reader(ByteBuffer.wrap(ev), "journal event")));
    }
    r.end();
    return group;
  }

  /**
   * Writes {@code state} as a snapshot file {@code target} in the journal's snapshot format (temp
   * file beside it, fsync, atomic rename); the master group's Raft snapshots use it too ({@link
   * MasterStateMachine}). The caller fsyncs the directory if the name must be durable.
   */
  static void writeSnapshotFile(Path target, long gen, List<MasterEvent> state) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
    try (FileChannel ch =
        FileChannel.open(
            tmp,
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE)) {
      ByteBuffer h = header(KIND_SNAPSHOT, gen);
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
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * Replays a snapshot file written by {@link #writeSnapshotFile} into {@code replay}; any damage
   * is corruption ({@link JournalCorruptException}). Returns the number of records.
   */
  static int readSnapshotFile(Path file, Consumer<MasterEvent> replay) throws IOException {
    ReadResult r = readFile(file, KIND_SNAPSHOT, replay);
    if (r.droppedBytes > 0) {
      throw new JournalCorruptException(file, r.goodLength, r.records, r.nextValid);
    }
    return r.records;
  }

  private static void writeRecords(FileChannel ch, List<List<MasterEvent>> groups)
      throws IOException {
    for (List<MasterEvent> g : groups) {
      byte[] body = encodeGroup(g);
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
    log = openLog(logPath, generation, true);
    allocated = log.size();
  }

  /** The log grows in zero-filled steps ({@link LogFiles}), fsync on only. */
  static final int PREALLOCATE = LogFiles.PREALLOCATE;

  /** A record starting closer than this to the zero-filled end triggers the next step. */
  static final int PREALLOCATE_AHEAD = 64 << 10;

  /** Bytes of the current log, zero-filled past its position; under the state lock. */
  private long allocated;

  /** Zero-fills the current log from {@link #allocated} to past {@code upTo} (positional). */
  private void preallocate(long upTo) throws IOException {
    allocated = LogFiles.zeroFill(log, allocated, upTo);
  }

  /**
   * Opens log {@code gen} for appends, writing its header if it has none; {@code sync}: fsync a new
   * file and the directory now (else the journal thread's next batch does).
   */
  private FileChannel openLog(Path logPath, long gen, boolean sync) throws IOException {
    boolean fresh = !Files.exists(logPath) || Files.size(logPath) < HEADER;
    FileChannel ch =
        FileChannel.open(
            logPath, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
    try {
      if (fresh) {
        ch.truncate(0);
        ByteBuffer h = header(KIND_LOG, gen);
        while (h.hasRemaining()) {
          ch.write(h);
        }
        if (sync) {
          ch.force(true);
          syncDirectory();
        }
      }
      ch.position(ch.size());
    } catch (IOException e) {
      ch.close();
      throw e;
    }
    return ch;
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

  /**
   * Writes {@code events} as one record (one group) and numbers it; does not fsync (the journal
   * thread does, see the class comment). Called under the state lock, one at a time. A record that
   * cannot be written is cut off and the call throws, so the caller can leave its state unchanged.
   *
   * @throws FerriteException INTERNAL if the write fails, or the journal failed earlier
   */
  void append(List<MasterEvent> events) {
    FerriteException failed = commit.failure();
    if (failed != null) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          "the master journal failed earlier, so the master accepts no more mutations: "
              + failed.detail(),
          failed);
    }
    long start = -1;
    try {
      start = log.position();
      if (fsync && start + PREALLOCATE_AHEAD > allocated) {
        preallocate(start + PREALLOCATE_AHEAD);
      }
      writeRecords(log, List.of(events));
      recordsSinceSnapshot += events.size();
    } catch (IOException e) {
      // Cut off a partial group so that later appends do not follow garbage.
      try {
        if (start >= 0) {
          log.truncate(start);
          log.position(start);
          allocated = Math.min(allocated, start);
        }
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new FerriteException(
          ErrorCode.INTERNAL, "cannot append to the master journal " + logFile(), e);
    }
    commit.appended();
  }

  /** LSN of the last record appended (0: none since open). */
  @Override
  public long writtenLsn() {
    return commit.writtenLsn();
  }

  /** LSN up to which every record is on disk (== {@link #writtenLsn} without fsync). */
  @Override
  public long durableLsn() {
    return commit.durableLsn();
  }

  /** The failure that stopped the journal, or null. */
  @Override
  public FerriteException failure() {
    return commit.failure();
  }

  /** See {@link GroupCommit#whenDurable}. Never blocks. */
  @Override
  public CompletableFuture<Void> whenDurable(long lsn) {
    return commit.whenDurable(lsn);
  }

  GroupCommit.Stats stats() {
    return commit.stats();
  }

  /** Writes {@code state} (from {@link MasterState#snapshotEvents}) as generation + 1, at once. */
  void snapshot(List<MasterEvent> state) {
    writeSnapshot(rotate(), state);
  }

  /**
   * Starts log G+1: appends go there from now on. Called under the state lock, with the state
   * copied for {@link #writeSnapshot} under the same hold, so the snapshot holds exactly the
   * records of logs up to G. No fsync here: the journal thread fsyncs the old log's tail, the new
   * log and the directory with its next batch, before it counts any later record durable.
   *
   * @return G+1, for {@link #writeSnapshot}
   */
  long rotate() {
    FerriteException failure = commit.failure();
    if (failure != null) {
      // The state holds mutations whose fsync failed: a snapshot would make them durable although
      // their callers were told they failed. Recovery from the log is the one truth now.
      throw new FerriteException(
          ErrorCode.INTERNAL, "no snapshot: the master journal failed", failure);
    }
    long next = generation + 1;
    Path path = file("log", next);
    FileChannel fresh;
    long freshSize;
    try {
      // The old log ends at its last record (its zero-filled rest cut: the journal thread's next
      // fsync of its tail covers the new size), as a clean close leaves it.
      log.truncate(log.position());
      fresh = openLog(path, next, false);
      freshSize = fresh.size();
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot start journal log " + path, e);
    }
    log = fresh;
    allocated = freshSize;
    generation = next;
    commit.rotated(fresh);
    recordsSinceSnapshot = 0;
    return next;
  }

  /**
   * Writes snapshot {@code gen} (from {@link #rotate}) of {@code state}: temp file, fsync, atomic
   * rename, directory fsync; then deletes the older snapshots and logs. Runs outside the state lock
   * (one at a time); appends and the journal thread go on meanwhile. If it fails, the logs still
   * hold everything (recovery chains them) and the next snapshot tries again.
   */
  void writeSnapshot(long gen, List<MasterEvent> state) {
    synchronized (snapshotLock) {
      Path snap = file("snapshot", gen);
      try {
        writeSnapshotFile(snap, gen, state);
        syncDirectory();
        // From here on generation `gen` is the recovery point: the older files are not needed
        // (a retired log the journal thread still fsyncs may be unlinked under it).
        for (long g : generations("log")) {
          if (g < gen) {
            Files.deleteIfExists(file("log", g));
          }
        }
        for (long g : generations("snapshot")) {
          if (g < gen) {
            Files.deleteIfExists(file("snapshot", g));
          }
        }
        LOG.log(
            System.Logger.Level.INFO,
            "journal snapshot {0}: {1} records",
            snap.getFileName(),
            state.size());
      } catch (IOException e) {
        throw new FerriteException(ErrorCode.INTERNAL, "cannot write journal snapshot " + snap, e);
      }
    }
  }

  /**
   * Stops the journal thread once it has made every written record durable, fsyncs and closes the
   * logs ({@link GroupCommit#close}).
   */
  @Override
  public void close() {
    try {
      if (log.isOpen() && allocated > log.position()) {
        // A clean stop leaves the log exactly its records (the zero-filled rest is cut; a crash
        // leaves it, and recovery cuts it). The close below fsyncs the new size.
        log.truncate(log.position());
        allocated = log.position();
      }
      commit.close();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot close the master journal " + logFile(), e);
    }
  }
}
