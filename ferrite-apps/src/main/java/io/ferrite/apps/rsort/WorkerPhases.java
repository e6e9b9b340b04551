package io.ferrite.apps.rsort;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.agrona.BufferUtil;

/**
 * What one RSort worker does in each phase (RStore §V-C; the phases are listed in {@link
 * RSortWorker}, which runs them as the coordinator starts them), and what it holds meanwhile: its
 * local buffers, its mappings, the namespaces it created and their reservations. Used by the
 * worker's one thread.
 */
final class WorkerPhases {
  /** Records generated or read (and progress reported) per step of the load phase. */
  static final int LOAD_STEP = 1 << 18;

  /** Records sorted (several times) to warm the JIT up before the timed phases. */
  static final int WARM_UP = 100_000;

  /** The scratch buffer: warm-up output, and the landing place of PREPARE's touching reads. */
  static final int SCRATCH = WARM_UP * Records.RECORD;

  /** Records per one-sided read of the timed phases: about 1 MB, processed while in cache. */
  static final int PIECE = 10_000;

  /** Reads issued ahead of the piece being processed (they complete inline over shm). */
  static final int AHEAD = 4;

  private final RSortJob job;
  private final int me;
  private final int workers;
  private final RStore store;
  private final Mapping coord;
  private final Consumer<String> log;
  private final WorkerArea area;
  private final long[] timings = new long[RSortLayout.TIMING_SLOTS];

  // Prepared in LOAD.
  private ByteBuffer a;
  private ByteBuffer b;
  private int shareRecords;
  private Mapping input;
  private final List<Namespace> buckets = new ArrayList<>();

  /** This worker's allocation in each worker_i_bucket_j, made in LOAD, mapped (writer side). */
  private final List<Mapping> bucketOut = new ArrayList<>();

  /** Every worker's prepared allocation of this worker's key range, mapped in PREPARE. */
  private Mapping[] bucketIn;

  private Namespace finalNs;
  private final Map<String, Long> reserved = new HashMap<>();

  /** The namespaces this worker created, deleted if it abandons the sort. */
  private final List<String> created = new ArrayList<>();

  // Results of SORT.
  private int rangeRecords;
  private long finalAddress;

  WorkerPhases(
      RSortJob job, int me, RStore store, Mapping coord, WorkerArea area, Consumer<String> log) {
    this.job = job;
    this.me = me;
    this.workers = job.workers();
    this.store = store;
    this.coord = coord;
    this.log = log;
    this.area = area;
  }

  /** The coordination barrier (§V-A) at the start of the coordination region. */
  Barrier barrier() {
    return new Barrier(coord, 0, workers);
  }

  /** The phase timings so far ({@link RSortLayout}'s slots). */
  long[] timings() {
    return timings;
  }

  void load() throws IOException {
    long t0 = System.nanoTime();
    long first = area.assignment(0);
    shareRecords = (int) area.assignment(1);
    long bytes = (long) shareRecords * Records.RECORD;
    // Room for the share and for a key range a little larger than average, so the timed phases
    // need no new buffer (allocating one zeroes it) unless the keys are skewed.
    long room =
        Math.min(
            (long) Records.MAX_BUFFER_RECORDS * Records.RECORD,
            Math.max(bytes, expected(job.bytes())) + (1 << 20));
    a = ByteBuffer.allocateDirect((int) room);
    b = ByteBuffer.allocateDirect(SCRATCH);
    List<RecordFiles.InputFile> files = job.input() == null ? null : RecordFiles.list(job.input());
    for (int done = 0; done < shareRecords; ) {
      int n = Math.min(LOAD_STEP, shareRecords - done);
      if (files == null) {
        RecordGenerator.generate(job.seed(), first + done, n, a, done * Records.RECORD);
      } else {
        RecordFiles.read(files, first + done, n, a, done * Records.RECORD);
      }
      done += n;
      area.progress((long) done * Records.RECORD);
    }
    area.summary(RecordValidator.summarize(a, 0, shareRecords));

    Namespace inputNs = create(job.inputNamespace(me));
    if (shareRecords > 0) {
      reserveFor(inputNs, bytes);
      input = inputNs.alloc(bytes, MemoryFlags.ALLOC_DEFAULT).map(MemoryFlags.MAP_NO_BUFFER);
      input.writeSync(0, a.slice(0, (int) bytes));
    }
    // One allocation of the expected size per key range; a skewed input allocates more in the
    // timed phase.
    long[] preparedAddress = new long[workers];
    long[] preparedCapacity = new long[workers];
    for (int j = 0; j < workers; j++) {
      Namespace ns = create(job.bucketNamespace(me, j));
      buckets.add(ns);
      long capacity = expected(bytes);
      reserveFor(ns, capacity);
      RAddress ra = ns.alloc(capacity, MemoryFlags.ALLOC_DEFAULT);
      bucketOut.add(ra.map(MemoryFlags.MAP_NO_BUFFER));
      preparedAddress[j] = ra.address();
      preparedCapacity[j] = capacity;
    }
    area.table(WorkerArea.Table.PREPARED, preparedAddress, preparedCapacity);
    finalNs = create(job.finalNamespace(me));
    reserveFor(finalNs, expected(job.bytes()));
    warmUp();
    timings[RSortLayout.T_LOAD] = System.nanoTime() - t0;
  }

  /** Maps and touches every worker's prepared bucket of this worker's key range. */
  void prepare() {
    int j = (int) area.assignment(0);
    bucketIn = new Mapping[workers];
    for (int i = 0; i < workers; i++) {
      long[] prepared = new WorkerArea(coord, i).entry(WorkerArea.Table.PREPARED, j);
      long address = prepared[0];
      long capacity = prepared[1];
      Namespace ns = i == me ? buckets.get(j) : store.joinNamespace(job.bucketNamespace(i, j));
      bucketIn[i] = RAddress.init(ns, address, capacity).map(MemoryFlags.MAP_NO_BUFFER);
      for (long at = 0; at < capacity; at += b.capacity()) {
        int n = (int) Math.min(b.capacity(), capacity - at);
        bucketIn[i].readSync(at, b.slice(0, n));
      }
    }
  }

  private long expected(long total) {
    long even = total / workers;
    return even + even / 50 + Records.RECORD;
  }

  /**
   * Runs the classify and sort code on a sample so the timed phases run compiled code (not for a
   * small job, whose JVM runs C1 only: there the warm-up would cost more than it saves).
   */
  private void warmUp() {
    if (job.bytes() < RSortCoordinator.QUICK_START_BYTES) {
      return;
    }
    int n = Math.min(shareRecords, WARM_UP);
    RecordSink scratch = RecordSink.into(b);
    for (int round = 0; round < 3; round++) {
      Classifier c = new Classifier(a, n, workers);
      c.count(0, n);
      c.scatter((target, offset, records) -> scratch.write(0, 0, records));
      RecordSorter.Keys keys = new RecordSorter.Keys(a, n);
      keys.extract(0, n);
      keys.sort();
      keys.permute(scratch, 0);
    }
  }

  /**
   * Reads {@code records} records from byte 0 of {@code m} into {@link #a} from record {@code at},
   * in pieces of {@link #PIECE} records with {@link #AHEAD} reads in flight, and hands each piece
   * to {@code then} as soon as it has arrived (while it is in the cache).
   */
  private void readInPieces(Mapping m, int at, int records, RecordSorter.Slice then) {
    int pieces = (records + PIECE - 1) / PIECE;
    List<CompletableFuture<Void>> reads = new ArrayList<>(pieces);
    for (int k = 0; k < pieces; k++) {
      while (reads.size() < pieces && reads.size() <= k + AHEAD) {
        int p = reads.size();
        int from = p * PIECE;
        int n = Math.min(PIECE, records - from);
        reads.add(
            m.read(
                (long) from * Records.RECORD,
                a.slice((at + from) * Records.RECORD, n * Records.RECORD)));
      }
      Futures.join(reads.get(k));
      int from = k * PIECE;
      then.run(at + from, at + Math.min(records, from + PIECE));
    }
  }

  void classify() {
    long t0 = System.nanoTime();
    Classifier c = new Classifier(a, shareRecords, workers);
    if (input != null) {
      readInPieces(input, 0, shareRecords, c::count);
    }
    long t1 = System.nanoTime();
    int[] counts = c.counts();
    Mapping[] out = new Mapping[workers];
    List<Mapping> extra = new ArrayList<>();
    long[] address = new long[workers];
    long[] count = new long[workers];
    try {
      for (int j = 0; j < workers; j++) {
        long size = (long) counts[j] * Records.RECORD;
        out[j] = bucketOut.get(j);
        if (size > out[j].length()) {
          // More than expected (a skewed input): an allocation of its own, made now.
          Namespace ns = buckets.get(j);
          reserveFor(ns, roundUp(ns, out[j].length()) + size);
          out[j] = ns.alloc(size, MemoryFlags.ALLOC_DEFAULT).map(MemoryFlags.MAP_NO_BUFFER);
          extra.add(out[j]);
        }
        address[j] = out[j].address();
        count[j] = counts[j];
      }
      c.scatter((target, offset, records) -> out[target].write(offset, records));
    } finally {
      extra.forEach(Mapping::unmap);
    }
    area.table(WorkerArea.Table.BUCKETS, address, count);
    long t2 = System.nanoTime();
    timings[RSortLayout.T_READ_INPUT] = t1 - t0;
    timings[RSortLayout.T_SCATTER] = t2 - t1;
  }

  void sort() {
    long t0 = System.nanoTime();
    int j = (int) area.assignment(0);
    long[] address = new long[workers];
    long[] count = new long[workers];
    long total = 0;
    for (int i = 0; i < workers; i++) {
      long[] e = new WorkerArea(coord, i).entry(WorkerArea.Table.BUCKETS, j);
      address[i] = e[0];
      count[i] = e[1];
      total += count[i];
    }
    if (total > Records.MAX_BUFFER_RECORDS) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "key range "
              + j
              + " holds "
              + total
              + " records, more than one 2 GiB buffer (a skewed input: use more workers)");
    }
    rangeRecords = (int) total;
    ensureCapacity((long) rangeRecords * Records.RECORD);
    RecordSorter.Keys keys = new RecordSorter.Keys(a, rangeRecords);
    List<Mapping> extra = new ArrayList<>();
    try {
      int at = 0;
      for (int i = 0; i < workers; i++) {
        int n = (int) count[i];
        if (n == 0) {
          continue;
        }
        Mapping m = bucketIn[i];
        if (m.address() != address[i] || m.length() < (long) n * Records.RECORD) {
          // Worker i's range j outgrew its prepared allocation: map the one it made instead.
          Namespace ns = store.joinNamespace(job.bucketNamespace(i, j));
          m =
              RAddress.init(ns, address[i], (long) n * Records.RECORD)
                  .map(MemoryFlags.MAP_NO_BUFFER);
          extra.add(m);
        }
        readInPieces(m, at, n, keys::extract);
        at += n;
      }
    } finally {
      extra.forEach(Mapping::unmap);
    }
    long t1 = System.nanoTime();
    keys.sort();
    long t2 = System.nanoTime();
    finalAddress = 0;
    if (rangeRecords > 0) {
      long bytes = (long) rangeRecords * Records.RECORD;
      Namespace ns = j == me ? finalNs : store.joinNamespace(job.finalNamespace(j));
      reserveFor(ns, bytes);
      RAddress ra = ns.alloc(bytes, MemoryFlags.ALLOC_DEFAULT);
      try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
        keys.permute((target, offset, records) -> m.write(offset, records), 0);
      }
      finalAddress = ra.address();
    }
    long t3 = System.nanoTime();
    timings[RSortLayout.T_READ_BUCKETS] = t1 - t0;
    timings[RSortLayout.T_SORT] = t2 - t1;
    timings[RSortLayout.T_PERMUTE] = t3 - t2;
  }

  void validate() throws IOException {
    long t0 = System.nanoTime();
    // The other workers delete their buckets in CLEANUP: drop this worker's references now.
    for (Mapping m : bucketIn) {
      m.unmap();
    }
    int j = (int) area.assignment(0);
    int bytes = rangeRecords * Records.RECORD;
    if (rangeRecords > 0) {
      Namespace ns = j == me ? finalNs : store.joinNamespace(job.finalNamespace(j));
      try (Mapping m = RAddress.init(ns, finalAddress, bytes).map(MemoryFlags.MAP_NO_BUFFER)) {
        m.readSync(0, a.slice(0, bytes)); // what is stored, not what this worker still holds
      }
    }
    area.summary(RecordValidator.summarize(a, 0, rangeRecords));
    if (job.output() != null) {
      Files.createDirectories(job.output());
      RecordFiles.write(RecordFiles.part(job.output(), j), a, 0, bytes);
    }
    area.progress(bytes);
    timings[RSortLayout.T_VALIDATE] = System.nanoTime() - t0;
  }

  void cleanup() {
    boolean deleteFinal = area.assignment(0) != 0;
    release();
    store.deleteNamespace(job.inputNamespace(me));
    for (int j = 0; j < workers; j++) {
      store.deleteNamespace(job.bucketNamespace(me, j));
    }
    if (deleteFinal) {
      store.deleteNamespace(job.finalNamespace(me));
    }
  }

  /** Unmaps the input and frees the local buffers now rather than at some garbage collection. */
  private void release() {
    if (input != null) {
      input.unmap();
      input = null;
    }
    bucketOut.forEach(Mapping::unmap);
    if (bucketIn != null) {
      for (Mapping m : bucketIn) {
        if (m != null) {
          m.unmap();
        }
      }
    }
    if (a != null) {
      BufferUtil.free(a);
      a = null;
    }
    if (b != null) {
      BufferUtil.free(b);
      b = null;
    }
  }

  /**
   * Drops every mapping, then deletes the namespaces this worker created; one another worker still
   * maps (it is abandoning the sort too) is retried for up to {@link RSortWorker#ABANDON}.
   */
  void abandon() {
    release();
    long deadline = System.nanoTime() + RSortWorker.ABANDON.toNanos();
    List<String> left = new ArrayList<>(created);
    while (!left.isEmpty()) {
      for (Iterator<String> it = left.iterator(); it.hasNext(); ) {
        String name = it.next();
        try {
          store.deleteNamespace(name);
          it.remove();
        } catch (FerriteException e) {
          if (e.code() != ErrorCode.CONFLICT) {
            it.remove(); // gone already, or the cluster is: nothing more to do here
          }
        }
      }
      if (left.isEmpty() || System.nanoTime() > deadline) {
        break;
      }
      LockSupport.parkNanos(50_000_000L);
    }
    if (!left.isEmpty()) {
      log.accept("could not delete (still mapped): " + String.join(", ", left));
    }
  }

  private Namespace create(String name) {
    Namespace ns = store.createNamespace(name);
    created.add(name);
    return ns;
  }

  /** {@code bytes} rounded up to whole chunks of {@code ns}: what an allocation takes. */
  private static long roundUp(Namespace ns, long bytes) {
    long chunk = ns.chunkSize();
    return (bytes + chunk - 1) / chunk * chunk;
  }

  /** Makes sure {@code ns} has at least {@code bytes} reserved (rounded up to chunks). */
  private void reserveFor(Namespace ns, long bytes) {
    long need = roundUp(ns, bytes);
    long have = reserved.getOrDefault(ns.name(), 0L);
    if (have < need) {
      reserved.put(ns.name(), ns.reserve(need - have));
    }
  }

  private void ensureCapacity(long bytes) {
    if (a.capacity() < bytes) {
      BufferUtil.free(a);
      a = ByteBuffer.allocateDirect((int) bytes);
    }
  }
}
