package io.ferrite.tx;

import static io.ferrite.tx.TxCommitTest.num;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.tx.server.TxLogsTesting;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tx logs on disk ({@code tx.log.sync}, docs/TX.md "Logs on disk"): a region whose every copy
 * is gone is rebuilt from its last primary's log with the same objects (values, versions,
 * incarnations) and an allocator that hands out no slot twice; a torn last record is cut; {@code
 * always} answers no commit before the fsync that covers it.
 */
@ExtendWith(SeedExtension.class)
class TxLogTest {
  @TempDir Path dir;
  TxCluster cluster;

  @AfterEach
  void stop() throws Exception {
    TxLogsTesting.fsync(null);
    if (cluster != null) {
      cluster.close();
    }
  }

  /** An fsync that can be held (each call waits while {@link #hold} is set) and counts calls. */
  static final class HeldFsync implements OpLog.Fsync {
    final Semaphore entered = new Semaphore(0);
    final AtomicLong calls = new AtomicLong();
    volatile CountDownLatch hold;

    @Override
    public void force(FileChannel ch) throws IOException {
      calls.incrementAndGet();
      CountDownLatch h = hold;
      if (h != null) {
        entered.release();
        try {
          h.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("held fsync interrupted");
        }
      }
      ch.force(false);
    }
  }

  /** What a test expects of one object after a restart. */
  record Expected(byte[] value, long version) {}

  /** Server settings beside {@code tx.log.sync} (a test of checkpoints sets a small threshold). */
  Map<String, String> settings = Map.of();

  private Map<String, String> with(String sync) {
    Map<String, String> m = new HashMap<>(settings);
    m.put(TxConfig.LOG_SYNC, sync);
    return m;
  }

  private TxClient start(int servers, int replicas, String sync) throws Exception {
    cluster = new TxCluster(dir, 0, false, replicas);
    for (int i = 0; i < servers; i++) {
      cluster.startServer("tx" + i, with(sync));
    }
    cluster.awaitServers(servers);
    return new TxClient(cluster.client());
  }

  /** Stops server {@code id} (its process: DRAM gone, the data directory stays); its name. */
  private String kill(int id) throws IOException {
    MemoryServer victim = cluster.server(id);
    cluster.servers.remove(victim);
    victim.close();
    return victim.name();
  }

  private MemoryServer restart(String name, String sync) {
    return cluster.startServer(name, with(sync));
  }

  private static FatPointer alloc(TxClient c, FatPointer hint, byte[] value) {
    Transaction t = c.txBegin();
    FatPointer p = t.txAlloc(value.length, hint);
    t.txWrite(p, value);
    TxResult r = t.txCommit();
    assertTrue(r.committed(), r.detail());
    return p;
  }

  private static void write(TxClient c, FatPointer p, byte[] value) {
    Transaction t = c.txBegin();
    t.txRead(p);
    t.txWrite(p, value);
    TxResult r = t.txCommit();
    assertTrue(r.committed(), r.detail());
  }

  private static Expected read(TxClient c, FatPointer p) {
    Transaction t = c.txBegin();
    byte[] v = t.txRead(p);
    return new Expected(v, t.readVersions().get(p));
  }

  /**
   * Objects in one region (the first one's), written, rewritten (one of them by a two-server
   * commit, so by COMMIT at the region's primary, not only single-server commits), some freed.
   */
  private Map<FatPointer, Expected> workload(
      TxClient c, FatPointer first, FatPointer elsewhere, Random random, List<FatPointer> freed) {
    List<FatPointer> all = new ArrayList<>(List.of(first));
    for (int i = 0; i < 20; i++) {
      byte[] v = new byte[1 + random.nextInt(300)];
      random.nextBytes(v);
      all.add(alloc(c, first, v));
    }
    for (int i = 0; i < 30; i++) {
      FatPointer p = all.get(random.nextInt(all.size()));
      byte[] v = new byte[p.size()];
      random.nextBytes(v);
      write(c, p, v);
    }
    if (elsewhere != null) {
      Transaction t = c.txBegin();
      t.txRead(first);
      t.txRead(elsewhere);
      t.txWrite(first, num(4242));
      t.txWrite(elsewhere, num(4343));
      TxResult r = t.txCommit();
      assertTrue(r.committed(), r.detail());
    }
    for (int i = 0; i < 5; i++) {
      FatPointer p = all.remove(1 + random.nextInt(all.size() - 1));
      Transaction t = c.txBegin();
      t.txFree(p);
      assertTrue(t.txCommit().committed());
      freed.add(p);
    }
    Map<FatPointer, Expected> out = new LinkedHashMap<>();
    for (FatPointer p : all) {
      out.put(p, read(c, p));
    }
    return out;
  }

  private static void assertSame(
      TxClient c, Map<FatPointer, Expected> expected, List<FatPointer> freed) {
    expected.forEach(
        (p, e) -> {
          Expected got = read(c, p); // the same fat pointer: the same incarnation
          assertArrayEquals(e.value(), got.value(), "value of " + p);
          assertEquals(e.version(), got.version(), "version of " + p);
        });
    for (FatPointer p : freed) {
      FerriteException e = assertThrows(FerriteException.class, () -> c.lockFreeRead(p));
      assertEquals(ErrorCode.NOT_FOUND, e.code(), "freed " + p + ": " + e.getMessage());
    }
  }

  /**
   * 60 allocations in the rebuilt region: on slots distinct from every live object's and from each
   * other's; one takes the slot of an allocation the lost primary handed out and never committed,
   * with another incarnation, so that stale pointer reads NOT_FOUND.
   */
  private static List<FatPointer> allocateAfterRecovery(
      TxClient c, FatPointer hint, Set<FatPointer> live, FatPointer uncommitted) {
    Set<Long> taken = new HashSet<>();
    for (FatPointer p : live) {
      taken.add(p.offset());
    }
    List<FatPointer> out = new ArrayList<>();
    boolean reused = false;
    for (int i = 0; i < 60; i++) {
      FatPointer p = alloc(c, hint, num(1000 + i));
      assertEquals(hint.region(), p.region());
      assertTrue(taken.add(p.offset()), "slot handed out twice: " + p);
      if (p.offset() == uncommitted.offset() && p.size() == uncommitted.size()) {
        reused = true;
        assertNotEquals(uncommitted.incarnation(), p.incarnation(), "same incarnation reused");
      }
      out.add(p);
    }
    assertTrue(reused, "the uncommitted allocation's slot " + uncommitted + " was never reused");
    FerriteException e = assertThrows(FerriteException.class, () -> c.lockFreeRead(uncommitted));
    assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
    return out;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void aCheckpointedLogRebuildsTheSameRegion(int replicas, Random random) throws Exception {
    settings = Map.of(TxConfig.LOG_CHECKPOINT, "4k");
    TxClient a = start(2, replicas, "interval");
    FatPointer x = alloc(a, null, num(5));
    int primary = a.view(x.region()).primary();
    List<FatPointer> freed = new ArrayList<>();
    long before = TxLogsTesting.checkpoints();
    Map<FatPointer, Expected> expected = workload(a, x, null, random, freed);
    List<FatPointer> objects = new ArrayList<>(expected.keySet());
    // Rewrites until the reaper checkpointed a log (of this region: the only one written).
    for (int i = 0; i < 20_000 && TxLogsTesting.checkpoints() < before + replicas; i++) {
      FatPointer p = objects.get(random.nextInt(objects.size()));
      byte[] v = new byte[p.size()];
      random.nextBytes(v);
      write(a, p, v);
    }
    assertTrue(TxLogsTesting.checkpoints() >= before + replicas, "no checkpoint was made");
    FatPointer late = alloc(a, x, num(31)); // records after the checkpoint too
    write(a, x, num(32));
    Transaction abandoned = a.txBegin();
    FatPointer uncommitted = abandoned.txAlloc(8, x);
    for (FatPointer p : objects) {
      expected.put(p, read(a, p));
    }
    expected.put(late, read(a, late));

    String name = kill(primary);
    if (replicas == 2) {
      int backup = primary;
      for (int i = 0; i < 3000 && backup == primary; i++) {
        write(a, late, num(33)); // retried by the client until the promoted backup answers
        backup = a.view(x.region()).primary();
      }
      assertNotEquals(primary, backup, "the backup was never promoted");
      expected.put(late, read(a, late));
      name = kill(backup);
    }
    restart(name, "interval");
    cluster.awaitServers(1);
    TxClient fresh = new TxClient(cluster.client());
    assertSame(fresh, expected, freed);
    if (replicas == 1) {
      // The checkpoint kept the allocator: no slot twice, the abandoned allocation's slot reused.
      allocateAfterRecovery(fresh, x, expected.keySet(), uncommitted);
    }
  }

  /**
   * Concurrent transfers (single- and two-server commits) under {@code always} with checkpoints
   * racing them, then both servers stopped (replicas 2: the second one held a copy of every region)
   * and one restarted: every region is rebuilt from its logs and the balances sum to the total.
   */
  @Test
  void concurrentTransfersThenEveryCopyStoppedKeepTheTotal(Random random) throws Exception {
    settings = Map.of(TxConfig.LOG_CHECKPOINT, "4k");
    TxClient a = start(2, 2, "always");
    TxClient b = new TxClient(cluster.client());
    List<FatPointer> accounts = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      accounts.add(alloc(i % 2 == 0 ? a : b, null, num(1000)));
    }
    long[] seeds = {random.nextLong(), random.nextLong(), random.nextLong()};
    long before = TxLogsTesting.checkpoints();
    ExecutorService workers =
        Executors.newFixedThreadPool(3, r -> new Thread(r, "tx-log-test-transfers"));
    try {
      List<Future<?>> done = new ArrayList<>();
      for (long seed : seeds) {
        done.add(
            workers.submit(
                () -> {
                  Random r = new Random(seed);
                  TxClient c = new TxClient(cluster.client());
                  for (int n = 0; n < 150; n++) {
                    FatPointer from = accounts.get(r.nextInt(accounts.size()));
                    FatPointer to = accounts.get(r.nextInt(accounts.size()));
                    if (from.equals(to)) {
                      continue;
                    }
                    long amount = 1 + r.nextInt(10);
                    for (int attempt = 0; attempt < 1000; attempt++) {
                      Transaction t = c.txBegin();
                      long f = num(t.txRead(from));
                      long g = num(t.txRead(to));
                      t.txWrite(from, num(f - amount));
                      t.txWrite(to, num(g + amount));
                      if (t.txCommit().committed()) {
                        break;
                      }
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      workers.shutdownNow();
      assertTrue(workers.awaitTermination(60, TimeUnit.SECONDS));
    }
    assertTrue(TxLogsTesting.checkpoints() > before, "no checkpoint raced the transfers");
    long total = 0;
    for (FatPointer p : accounts) {
      total += num(a.lockFreeRead(p));
    }
    assertEquals(12 * 1000, total, "before the stop");

    kill(cluster.servers.get(0).serverId());
    String last = kill(cluster.servers.get(0).serverId());
    restart(last, "always");
    cluster.awaitServers(1);
    TxClient fresh = new TxClient(cluster.client());
    Transaction audit = fresh.txBegin();
    long sum = 0;
    for (FatPointer p : accounts) {
      sum += num(audit.txRead(p));
    }
    assertTrue(audit.txCommit().committed());
    assertEquals(12 * 1000, sum, "after every copy was rebuilt from the logs");
  }

  @Test
  void aRestartedPrimaryRebuildsItsRegionFromItsLog(Random random) throws Exception {
    TxClient a = start(2, 1, "interval");
    FatPointer x = alloc(a, null, num(5));
    int primary = a.view(x.region()).primary();
    // An object on the other server, for a two-server commit.
    TxClient b = new TxClient(cluster.client());
    FatPointer y = alloc(b, null, num(7));
    if (b.view(y.region()).primary() == primary) {
      y = null; // both clients' first regions on one server: no two-server commit then
    }
    List<FatPointer> freed = new ArrayList<>();
    Map<FatPointer, Expected> expected = workload(a, x, y, random, freed);
    Transaction abandoned = a.txBegin();
    FatPointer uncommitted = abandoned.txAlloc(8, x); // handed out, never committed nor freed

    restart(kill(primary), "interval");
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    assertSame(fresh, expected, freed);
    List<FatPointer> later = allocateAfterRecovery(fresh, x, expected.keySet(), uncommitted);
    write(fresh, x, num(99));
    expected.put(x, read(fresh, x));
    for (FatPointer p : later) {
      expected.put(p, read(fresh, p));
    }

    // Recovered again: the log kept growing after the first recovery.
    restart(kill(primary), "interval");
    cluster.awaitServers(2);
    assertSame(new TxClient(cluster.client()), expected, freed);
  }

  @Test
  void whenBothCopiesStopTheLastPrimaryRebuildsFromItsLog(Random random) throws Exception {
    TxClient a = start(2, 2, "interval");
    FatPointer x = alloc(a, null, num(5));
    int primary = a.view(x.region()).primary();
    List<FatPointer> freed = new ArrayList<>();
    Map<FatPointer, Expected> expected = workload(a, x, null, random, freed);

    kill(primary); // the backup is promoted; its log goes on as the primary's
    int backup = primary;
    for (int i = 0; i < 3000 && backup == primary; i++) {
      write(a, x, num(6)); // retried by the client until the promoted backup answers
      backup = a.view(x.region()).primary();
    }
    assertNotEquals(primary, backup, "the backup was never promoted");
    FatPointer z = alloc(a, x, num(77));
    write(a, x, num(8));
    expected.put(x, read(a, x));
    expected.put(z, read(a, z));

    restart(kill(backup), "interval"); // every copy gone: only its log is left
    cluster.awaitServers(1);
    assertSame(new TxClient(cluster.client()), expected, freed);
  }

  /**
   * A copy made by re-replication (a fill) logs what it was filled with: 3 servers, replicas 2; the
   * backup stopped, a new copy filled on the third server; then the primary stopped (the new copy
   * promoted) and the new copy stopped and restarted: it rebuilds the region from its log.
   */
  @Test
  void aFilledCopyRebuildsFromItsLog(Random random) throws Exception {
    TxClient a = start(3, 2, "interval");
    FatPointer x = alloc(a, null, num(5));
    List<FatPointer> freed = new ArrayList<>();
    Map<FatPointer, Expected> expected = workload(a, x, null, random, freed);
    TxRepairTest placements = new TxRepairTest();
    placements.cluster = cluster;
    TxPlacement first = placements.placement(x.region());
    kill(first.backups().get(0));
    TxRepairTest.awaitCopies(cluster, a, x); // the third server was filled
    int filled = placements.placement(x.region()).backups().get(0);
    write(a, x, num(77)); // a record after the fill, forwarded to the new copy
    expected.put(x, read(a, x));

    kill(first.primary());
    int now = first.primary();
    for (int i = 0; i < 3000 && now != filled; i++) {
      write(a, x, num(78)); // retried by the client until the filled copy, promoted, answers
      now = a.view(x.region()).primary();
    }
    assertEquals(filled, now, "the filled copy was never promoted");
    expected.put(x, read(a, x));
    restart(kill(filled), "interval"); // every copy gone: only the filled copy's log is left
    cluster.awaitServers(1);
    assertSame(new TxClient(cluster.client()), expected, freed);
  }

  @Test
  void aTornLastRecordIsCutAndTheRestIsReplayed(Random random) throws Exception {
    TxClient a = start(2, 1, "none");
    FatPointer x = alloc(a, null, num(5));
    int primary = a.view(x.region()).primary();
    List<FatPointer> freed = new ArrayList<>();
    Map<FatPointer, Expected> expected = workload(a, x, null, random, freed);
    FatPointer last = expected.keySet().iterator().next();
    write(a, last, num(123456)); // the last record: torn below

    String name = kill(primary);
    Path log;
    try (var files = Files.walk(dir)) {
      log =
          files
              .filter(f -> f.getFileName().toString().equals("region-" + x.region() + ".log"))
              .findFirst()
              .orElseThrow();
    }
    long size = Files.size(log);
    try (FileChannel ch = FileChannel.open(log, StandardOpenOption.WRITE)) {
      ch.truncate(size - 1 - random.nextInt(20)); // inside the last record
    }
    restart(name, "none");
    cluster.awaitServers(2);
    TxClient fresh = new TxClient(cluster.client());
    assertSame(fresh, expected, freed); // `last` at its value before the torn write
    write(fresh, last, num(7)); // the log is usable again after the cut
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void alwaysAnswersNoCommitBeforeItsFsync(int replicas) throws Exception {
    HeldFsync fsync = new HeldFsync();
    TxLogsTesting.fsync(fsync);
    TxClient a = start(2, replicas, "always");
    FatPointer x = alloc(a, null, num(5));
    CountDownLatch hold = new CountDownLatch(1);
    ExecutorService committer =
        Executors.newSingleThreadExecutor(r -> new Thread(r, "tx-log-test-committer"));
    Future<TxResult> commit;
    try {
      fsync.hold = hold;
      commit =
          committer.submit(
              () -> {
                Transaction t = a.txBegin();
                t.txRead(x);
                t.txWrite(x, num(6));
                return t.txCommit();
              });
      boolean entered = false;
      for (int i = 0; i < 6000 && !entered && !commit.isDone(); i++) {
        entered = fsync.entered.tryAcquire(10, TimeUnit.MILLISECONDS);
      }
      assertFalse(commit.isDone(), "a commit was answered before any fsync of its record");
      assertTrue(entered, "no fsync was asked for");
      Thread.sleep(50); // an answer sent before the fsync would arrive meanwhile
      assertFalse(commit.isDone(), "a commit was answered while its fsync was blocked");
    } finally {
      fsync.hold = null; // released whatever happened: a held fsync holds shutdown too
      hold.countDown();
      committer.shutdown();
    }
    TxResult r = commit.get(60, TimeUnit.SECONDS);
    assertTrue(r.committed(), r.detail());
    assertEquals(6, num(a.lockFreeRead(x)));
    assertTrue(committer.awaitTermination(60, TimeUnit.SECONDS));
  }

  @Test
  void intervalFsyncsUnaskedAndNoneNever() throws Exception {
    HeldFsync fsync = new HeldFsync();
    TxLogsTesting.fsync(fsync);
    TxClient a = start(1, 1, "interval");
    FatPointer x = alloc(a, null, num(5));
    write(a, x, num(6));
    for (int i = 0; i < 6000 && fsync.calls.get() == 0; i++) {
      Thread.sleep(10); // no commit waits for it: only the interval thread asks
    }
    assertTrue(fsync.calls.get() > 0, "interval: the log was never fsynced");
    cluster.close();
    cluster = null;

    HeldFsync never = new HeldFsync();
    TxLogsTesting.fsync(never);
    TxClient b = start(1, 1, "none");
    FatPointer y = alloc(b, null, num(5));
    for (int i = 0; i < 20; i++) {
      write(b, y, num(i));
    }
    Thread.sleep(100); // ten default intervals
    assertEquals(0, never.calls.get(), "none: a log was fsynced before it closed");
  }

  @Test
  void everySyncValueIsAcceptedAndABadOneIsNamed() throws Exception {
    for (String sync : List.of("none", "interval", "always")) {
      FerriteConfig c = FerriteConfig.defaults().with(TxConfig.LOG_SYNC, sync);
      assertEquals(sync, c.get(TxConfig.LOG_SYNC));
    }
    Exception e =
        assertThrows(
            Exception.class, () -> FerriteConfig.defaults().with(TxConfig.LOG_SYNC, "sometimes"));
    assertTrue(e.getMessage().contains("tx.log.sync"), e.getMessage());
    Exception f =
        assertThrows(
            Exception.class, () -> FerriteConfig.defaults().with(TxConfig.LOG_INTERVAL, "0ms"));
    assertTrue(f.getMessage().contains("tx.log.interval"), f.getMessage());
    // A cluster on `none` serves and keeps what it committed across a clean restart.
    TxClient a = start(1, 1, "none");
    FatPointer x = alloc(a, null, num(5));
    Map<FatPointer, Expected> expected = new HashMap<>(Map.of(x, read(a, x)));
    restart(kill(a.view(x.region()).primary()), "none");
    cluster.awaitServers(1);
    assertSame(new TxClient(cluster.client()), expected, List.of());
  }
}
