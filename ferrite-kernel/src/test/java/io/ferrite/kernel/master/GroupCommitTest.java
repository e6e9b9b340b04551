package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Group commit of the master's journal through the real RPC path (the local fabric, {@link
 * MasterService}): an fsync held shut lets no answer out, one fsync covers the mutations that
 * queued behind it, a failed fsync fails its callers and stops mutations, snapshots rotate the log
 * under a running journal thread.
 */
@ExtendWith(SeedExtension.class)
class GroupCommitTest {
  /** How long a held answer is given to (wrongly) arrive. Not a timing assertion: a bound. */
  static final long HELD_MILLIS = 300;

  static final int COUNTER = 77;
  static final int INCREMENT = 1;
  static final int GET_INLINE = 2;

  @TempDir Path dir;

  final HeldFsync fsync = new HeldFsync();

  /** A journaled counter: INCREMENT on the executor (a mutation), GET answered inline. */
  static final class Counter implements MasterExtension {
    final AtomicLong value = new AtomicLong();
    MasterContext ctx;

    @Override
    public int serviceId() {
      return COUNTER;
    }

    @Override
    public String name() {
      return "counter";
    }

    @Override
    public void apply(ByteBuffer record) {
      value.addAndGet(record.getLong());
    }

    @Override
    public List<byte[]> snapshot() {
      return List.of(new Wire.Writer().i64(value.get()).toArray());
    }

    @Override
    public void start(MasterContext context) {
      ctx = context;
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer req) {
      long v =
          ctx.mutate(
              m -> {
                m.commit(new Wire.Writer().i64(1).toArray());
                return value.get();
              });
      return CompletableFuture.completedFuture(new Wire.Writer().i64(v).toBuffer());
    }

    @Override
    public CompletableFuture<ByteBuffer> handleInline(
        RpcContext caller, int opcode, ByteBuffer req) {
      return opcode == GET_INLINE
          ? CompletableFuture.completedFuture(new Wire.Writer().i64(value.get()).toBuffer())
          : null;
    }
  }

  /** The counter of the master started last (a restarted master gets a new one, replayed). */
  volatile Counter counter = new Counter();

  /** A cluster over the local fabric whose master fsyncs its journal through {@link #fsync}. */
  ClusterHarness cluster() throws IOException {
    Map<String, String> settings = new HashMap<>();
    settings.put(FerriteConfig.JOURNAL_FSYNC, "true");
    // Heartbeat answers wait for held fsyncs too: a server must not be declared dead meanwhile.
    settings.put(FerriteConfig.DEAD_TIMEOUT, "60s");
    // The sessions the tests open by RPC are never renewed: with the harness's 2 s lease, a slow
    // run saw them expire (journaled closes) and reported them "lost".
    settings.put(FerriteConfig.SESSION_LEASE, "10m");
    settings.put(FerriteConfig.CAPACITY_DRAM, "4m");
    return new ClusterHarness(dir, LocalCluster.CREDENTIALS, false, settings) {
      @Override
      protected Master launchMaster(List<Fabric> on, List<MasterExtension> extensions) {
        counter = new Counter();
        return fsync.start(config, credentials, on, List.of(counter));
      }
    };
  }

  static CompletableFuture<Long> openSession(FerriteClient c, String name) {
    return c.callMaster(
            MasterProtocol.SERVICE,
            MasterProtocol.OPEN_SESSION,
            new Wire.Writer(32).str(name).i32(0).toBuffer())
        .thenApply(b -> new Wire.Reader(b, "session").i64("sessionId"));
  }

  static CompletableFuture<List<BlockRef>> owned(FerriteClient c, String owner) {
    return c.callMaster(
            MasterProtocol.SERVICE,
            MasterProtocol.OWNED,
            new Wire.Writer(40).i64(c.sessionId()).str(owner).toBuffer())
        .thenApply(b -> MasterProtocol.readBlocks(new Wire.Reader(b, "owned")));
  }

  static CompletableFuture<Integer> sessions(FerriteClient c) {
    return c.callMaster(MasterProtocol.SERVICE, MasterProtocol.STATUS, ByteBuffer.allocate(0))
        .thenApply(b -> MasterProtocol.readStatus(new Wire.Reader(b, "status")).sessions());
  }

  static CompletableFuture<Long> counterCall(FerriteClient c, int opcode) {
    return c.callMaster(COUNTER, opcode, ByteBuffer.allocate(0))
        .thenApply(b -> new Wire.Reader(b, "counter").i64("value"));
  }

  static void await(String what, BooleanSupplier probe) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!probe.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(1);
    }
  }

  /** None of {@code held} is answered within {@link #HELD_MILLIS}. */
  static void assertHeld(String what, CompletableFuture<?>... held) throws Exception {
    CompletableFuture<Object> any = CompletableFuture.anyOf(held);
    assertThrows(
        TimeoutException.class,
        () -> any.get(HELD_MILLIS, TimeUnit.MILLISECONDS),
        what + " answered while the fsync covering it was held");
  }

  @Test
  void noAnswerLeavesBeforeTheFsyncThatCoversIt() throws Exception {
    try (ClusterHarness c = cluster()) {
      c.startMaster();
      c.startServer("s1");
      c.awaitServers(1);
      FerriteClient client = c.client();
      Journal journal = c.master.journal();
      await("registration durable", () -> journal.durableLsn() == journal.writtenLsn());

      fsync.hold();
      CompletableFuture<List<BlockRef>> alloc = client.allocateAsync(2, "", false, "held-owner");
      CompletableFuture<Long> increment = counterCall(client, INCREMENT);
      // Applied in memory (so written to the log) while the journal thread sits in the fsync.
      await("allocation applied", () -> !c.master.state().owned("held-owner").isEmpty());
      await("increment applied", () -> counter.value.get() == 1);
      assertTrue(fsync.entered.tryAcquire(30, TimeUnit.SECONDS), "no fsync started");
      // Reads issued after the mutations, that see them: a kernel read on the executor, an
      // extension's inline read.
      CompletableFuture<List<BlockRef>> read = owned(client, "held-owner");
      CompletableFuture<Long> inlineRead = counterCall(client, GET_INLINE);
      assertHeld("a mutation, a read or an inline read", alloc, increment, read, inlineRead);
      assertTrue(journal.durableLsn() < journal.writtenLsn());

      fsync.open();
      List<BlockRef> got = alloc.get(30, TimeUnit.SECONDS);
      assertEquals(2, got.size());
      assertEquals(new HashSet<>(got), new HashSet<>(read.get(30, TimeUnit.SECONDS)));
      assertEquals(1L, increment.get(30, TimeUnit.SECONDS));
      assertEquals(1L, inlineRead.get(30, TimeUnit.SECONDS));
      assertNull(journal.failure());
    }
  }

  @Test
  void oneFsyncCoversTheMutationsQueuedBehindIt() throws Exception {
    try (ClusterHarness c = cluster()) {
      c.startMaster();
      List<FerriteClient> clients = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        clients.add(c.client());
      }
      Journal journal = c.master.journal();
      await("sessions durable", () -> journal.durableLsn() == journal.writtenLsn());
      int before = sessions(clients.get(0)).get(30, TimeUnit.SECONDS);

      fsync.hold();
      // A first mutation whose fsync is held: the journal thread took its target before any of the
      // n below was written, so one more fsync must cover all of them.
      CompletableFuture<Long> primer = openSession(clients.get(0), "primer");
      assertTrue(fsync.entered.tryAcquire(30, TimeUnit.SECONDS), "no fsync started");
      int n = 48;
      long first = journal.writtenLsn();
      List<CompletableFuture<Long>> opened = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        opened.add(openSession(clients.get(i % clients.size()), "batch-" + i));
      }
      await("all " + n + " sessions applied", () -> journal.writtenLsn() >= first + n);
      long last = journal.writtenLsn();
      GroupCommit.Stats held = journal.stats();
      // Each answer is checked as it arrives: the fsync covering every record is done.
      List<String> early = new CopyOnWriteArrayList<>();
      for (CompletableFuture<Long> f : opened) {
        f.thenRun(
            () -> {
              if (journal.durableLsn() < last) {
                early.add("answered at durable " + journal.durableLsn() + " < " + last);
              }
            });
      }
      opened.add(primer);
      assertHeld("an open-session", opened.toArray(new CompletableFuture<?>[0]));
      opened.remove(primer);

      fsync.open();
      CompletableFuture.allOf(opened.toArray(new CompletableFuture<?>[0]))
          .get(30, TimeUnit.SECONDS);
      assertEquals(List.of(), early);
      GroupCommit.Stats after = journal.stats();
      primer.get(30, TimeUnit.SECONDS);
      // The held fsync (the primer's), then one for all n.
      long fsyncs = after.fsyncs() - held.fsyncs();
      assertEquals(2, fsyncs, fsyncs + " fsyncs for " + n + " queued mutations: " + after);
      assertTrue(after.largestBatch() >= n, "largest batch: " + after);
      assertEquals(before + n + 1, sessions(clients.get(0)).get(30, TimeUnit.SECONDS));
    }
  }

  @Test
  void concurrentMutatorsShareFsyncs(Random random) throws Exception {
    fsync.delayMillis = 2; // a slow disk: batches form while it flushes
    try (ClusterHarness c = cluster()) {
      c.startMaster();
      int threads = 16;
      int each = 10 + random.nextInt(10);
      List<FerriteClient> clients = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        // Without a session: its calls carry no request id, so each OPEN_SESSION is exactly one
        // record (with an id, the answer it is remembered by is a second record in the same
        // fsync: RideThroughTest).
        clients.add(
            c.client(
                io.ferrite.kernel.client.ClientOptions.builder(
                        c.credentials.as(io.ferrite.fabric.Role.CLIENT))
                    .session(false)));
      }
      GroupCommit.Stats before = c.master.journal().stats();
      List<Throwable> errors = new CopyOnWriteArrayList<>();
      List<Thread> ts = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        FerriteClient client = clients.get(t);
        int id = t;
        ts.add(
            new Thread(
                () -> {
                  try {
                    for (int i = 0; i < each; i++) {
                      openSession(client, "m" + id + "-" + i).get(30, TimeUnit.SECONDS);
                    }
                  } catch (Throwable e) {
                    errors.add(e);
                  }
                },
                "mutator-" + t));
      }
      ts.forEach(Thread::start);
      for (Thread t : ts) {
        t.join();
      }
      assertEquals(List.of(), errors);
      GroupCommit.Stats after = c.master.journal().stats();
      long records = after.recordsWritten() - before.recordsWritten();
      long fsyncs = after.fsyncs() - before.fsyncs();
      assertEquals((long) threads * each, records);
      assertTrue(
          fsyncs * 2 < records,
          fsyncs + " fsyncs for " + records + " records from " + threads + " threads: " + after);
    }
  }

  @Test
  void aFailedFsyncFailsItsCallersAndStopsMutations() throws Exception {
    try (ClusterHarness c = cluster()) {
      c.startMaster();
      FerriteClient client = c.client();
      Journal journal = c.master.journal();
      await("session durable", () -> journal.durableLsn() == journal.writtenLsn());
      int sessionsBefore = c.master.state().sessionCount();

      fsync.fail = true;
      ExecutionException first =
          assertThrows(
              ExecutionException.class,
              () -> openSession(client, "doomed").get(30, TimeUnit.SECONDS));
      FerriteException fe = FerriteException.unwrap(first.getCause());
      assertEquals(ErrorCode.INTERNAL, fe.code(), fe.toString());
      assertTrue(fe.detail().contains("fsync"), fe.detail());
      assertTrue(journal.failure() != null);

      // A later mutation is refused before it changes anything.
      ExecutionException second =
          assertThrows(
              ExecutionException.class,
              () -> openSession(client, "refused").get(30, TimeUnit.SECONDS));
      FerriteException fe2 = FerriteException.unwrap(second.getCause());
      assertEquals(ErrorCode.INTERNAL, fe2.code(), fe2.toString());
      // (Its own refusal, or the journal's failure that every later answer now carries.)
      assertTrue(fe2.detail().contains("fsync of the master journal"), fe2.detail());
      assertEquals(sessionsBefore + 1, c.master.state().sessionCount()); // "doomed" only
      assertThrows(FerriteException.class, () -> c.master.snapshot());
    }
  }

  @Test
  void aSnapshotNeitherWaitsForTheJournalsFsyncNorHoldsMutationsBack() throws Exception {
    try (ClusterHarness c = cluster()) {
      c.startMaster();
      FerriteClient client = c.client();
      Journal journal = c.master.journal();
      await("session durable", () -> journal.durableLsn() == journal.writtenLsn());
      int sessions = c.master.state().sessionCount();

      fsync.hold();
      CompletableFuture<Long> before = openSession(client, "before-the-snapshot");
      assertTrue(fsync.entered.tryAcquire(30, TimeUnit.SECONDS), "no fsync started");
      long generation = journal.generation();
      // On another thread, bounded: a snapshot that waited for the held fsync would never return.
      CompletableFuture<Void> snapshot = CompletableFuture.runAsync(c.master::snapshot);
      snapshot.get(30, TimeUnit.SECONDS);
      assertEquals(generation + 1, journal.generation());
      CompletableFuture<Long> after = openSession(client, "after-the-snapshot");
      await("both applied", () -> c.master.state().sessionCount() == sessions + 2);
      assertHeld("a session", before, after);

      fsync.open();
      long a = before.get(30, TimeUnit.SECONDS);
      long b = after.get(30, TimeUnit.SECONDS);
      assertNull(journal.failure());
      Master again = c.startMaster();
      assertTrue(again.state().hasSession(a), "in the snapshot");
      assertTrue(again.state().hasSession(b), "in the log after it");
    }
  }

  @Test
  void snapshotsRotateTheLogUnderConcurrentMutations() throws Exception {
    fsync.delayMillis = 1; // keep fsyncs in flight while the snapshot swaps the log
    List<Long> acked = new CopyOnWriteArrayList<>();
    List<Throwable> errors = new CopyOnWriteArrayList<>();
    try (ClusterHarness c = cluster()) {
      c.startMaster();
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> ts = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        FerriteClient client = c.client();
        int id = t;
        ts.add(
            new Thread(
                () -> {
                  try {
                    for (int i = 0; !stop.get(); i++) {
                      acked.add(openSession(client, "s" + id + "-" + i).get(30, TimeUnit.SECONDS));
                      counterCall(client, INCREMENT).get(30, TimeUnit.SECONDS);
                    }
                  } catch (Throwable e) {
                    errors.add(e);
                  }
                },
                "mutator-" + t));
      }
      ts.forEach(Thread::start);
      Journal journal = c.master.journal();
      long generation = journal.generation();
      for (int i = 0; i < 20; i++) {
        long target = journal.writtenLsn() + 5;
        await("more mutations", () -> journal.writtenLsn() >= target || !errors.isEmpty());
        c.master.snapshot();
      }
      stop.set(true);
      for (Thread t : ts) {
        t.join();
      }
      assertEquals(List.of(), errors);
      assertNull(journal.failure());
      assertEquals(generation + 20, journal.generation());
      long counted = counter.value.get();

      Master again = c.startMaster(); // the same journal: snapshot 20 and its log
      for (long id : acked) {
        assertTrue(again.state().hasSession(id), "acknowledged session " + id + " lost");
      }
      assertEquals(counted, counter.value.get());
      assertFalse(acked.isEmpty());
    }
  }
}
