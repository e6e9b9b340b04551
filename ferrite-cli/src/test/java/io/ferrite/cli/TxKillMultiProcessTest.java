package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.testing.SerializabilityChecker;
import io.ferrite.kernel.testing.TxHistory;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxPlacement;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SIGKILL tests of the tx face with separate JVMs (issue #13, Correctness; docs/TX.md): a master
 * and three memory servers over tcp ({@code tx.replicas} at its default, 2), twelve accounts in two
 * regions whose primaries are two different servers, bank transfers from three threads of this JVM
 * and two of a client JVM ({@link TxKillClient}), an auditor; then one process is SIGKILLed in the
 * middle of commits:
 *
 * <ul>
 *   <li>{@link Victim#PRIMARY}: the primary of the first region, the decider of every two-server
 *       transfer (its region has the lowest id); the master declares it DEAD, its backup is
 *       promoted and resolves the transfers it had not decided, transfers over that region commit
 *       again;
 *   <li>{@link Victim#PARTICIPANT}: the primary of the second region, a participant that never
 *       decides: its promoted backup asks the decider about the transfers it had locked;
 *   <li>{@link Victim#LONE_PARTICIPANT}: the same with {@code tx.replicas} 1, so no backup: the
 *       server is started again on its directory, its region rebuilt from its log (LOCK records
 *       written before LOCK OK, {@code tx.log.sync=always}), and the transfers it had locked ask
 *       the decider;
 *   <li>{@link Victim#BACKUP}: a server that backs a region and is the primary of none;
 *   <li>{@link Victim#COORDINATOR}: the client JVM, right after it printed that it starts a
 *       two-server commit; the locks it held go away with the participants' lease ({@code
 *       tx.lock.lease}). Most kills land while it holds locks (the test prints, per account it was
 *       committing, when it was written again: about a lease after the kill then), not every one: a
 *       SIGKILL from outside cannot pick the instant.
 * </ul>
 *
 * Then, with the survivors: every account is readable by a lock-free read (unlocked) within a
 * bounded wait, the balances sum to the total, and the whole history (both JVMs, plus one audit of
 * every account at the end) is strictly serializable ({@link SerializabilityChecker}): a transfer
 * acknowledged as committed whose writes were lost makes the final audit read an older version of
 * an account than a transaction that completed before it wrote, a cycle that real time closes. A
 * commit that threw, and the client JVM's commits in flight at its death, are UNKNOWN. The time
 * from "declared DEAD" (or the kill) to the first commit over the victim's regions is printed, not
 * asserted.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class TxKillMultiProcessTest extends ProcessClusterTest {
  /** Server keys: small regions (the servers have 48 MiB), a short lock lease. */
  static final String[] TX_SETS = {
    "tx.region.size=4m", "tx.slab.size=64k", "tx.object.max=1k", "tx.lock.lease=1s"
  };

  static final int TRANSFER_THREADS = 3;
  static final int CHILD_THREADS = 2;
  static final int AUDITOR = TRANSFER_THREADS;
  static final int FINAL_AUDIT = TRANSFER_THREADS + 1;

  /** Which process dies. */
  enum Victim {
    PRIMARY,
    PARTICIPANT,
    /**
     * With {@code tx.replicas} 1: the primary of the second region, which has no backup; its LOCK
     * records are in its own log ({@code tx.log.sync=always}), and it is started again on the same
     * directory.
     */
    LONE_PARTICIPANT,
    BACKUP,
    COORDINATOR
  }

  /** A region's placement as the master's TxDirectory answers it. */
  /** A committed transfer of this JVM: when, and the regions it wrote. */
  record Committed(long invoke, long complete, Set<Integer> regions) {}

  private final TxHistory history = new TxHistory();
  private final ConcurrentLinkedQueue<Committed> committed = new ConcurrentLinkedQueue<>();
  private final AtomicLong tags = new AtomicLong(1); // tag 0 is the setup's
  private final AtomicLong unknown = new AtomicLong();

  /** Committed audits that saw another total: asserted after the checker (which names why). */
  private final ConcurrentLinkedQueue<String> badAudits = new ConcurrentLinkedQueue<>();

  private List<FatPointer> accounts;

  @Test
  void aSigkilledPrimaryLosesNoAcknowledgedTransfer(TestSeed seed) throws Exception {
    run(Victim.PRIMARY, seed);
  }

  @Test
  void aSigkilledParticipantPrimaryLosesNoAcknowledgedTransfer(TestSeed seed) throws Exception {
    run(Victim.PARTICIPANT, seed);
  }

  @Test
  void aSigkilledLoneParticipantRestartedFromItsLogLosesNoAcknowledgedTransfer(TestSeed seed)
      throws Exception {
    run(Victim.LONE_PARTICIPANT, seed);
  }

  @Test
  void aSigkilledBackupLosesNoAcknowledgedTransfer(TestSeed seed) throws Exception {
    run(Victim.BACKUP, seed);
  }

  @Test
  void aSigkilledCoordinatorLeavesNoLockAndNoHalfTransfer(TestSeed seed) throws Exception {
    run(Victim.COORDINATOR, seed);
  }

  private void run(Victim victim, TestSeed seed) throws Exception {
    newCluster("tx-kill-mp", "ferrite-tx-kill-mp-");
    boolean lone = victim == Victim.LONE_PARTICIPANT;
    if (lone) {
      startMaster("master", "server.dead.timeout=1s", "tx.replicas=1");
    } else {
      startMaster("master", "server.dead.timeout=1s");
    }
    String[] serverSets = Arrays.copyOf(TX_SETS, TX_SETS.length + 1);
    serverSets[TX_SETS.length] = "tx.log.sync=always";
    Map<String, Process> servers = new HashMap<>();
    for (String name : List.of("s1", "s2", "s3")) {
      servers.put(name, startServer(name, "48m", "0", serverSets));
    }
    FerriteClient admin = await("the master", () -> tcpClient("tx-kill-admin"));
    await("3 ALIVE servers", () -> alive(admin) == 3);
    Map<String, Integer> ids = new HashMap<>();
    admin.refreshMembers().forEach(m -> ids.put(m.name(), m.serverId()));

    // Two regions, primaries s1 and s2 (named: NEW_REGION's near server); the master places
    // their backups. Accounts alternate between them, so most transfers are two-server commits.
    TxClient maker = new TxClient(tcpClient("tx-kill-setup"));
    TxPlacement[] regions = {
      maker.newRegionNear(ids.get("s1")), maker.newRegionNear(ids.get("s2"))
    };
    accounts = new ArrayList<>();
    try {
      for (int i = 0; i < TxKillBank.ACCOUNTS; i++) {
        FatPointer p = make(maker, regions[i % 2].region());
        accounts.add(p);
        assertEquals(i, history.key(i));
        history.initialVersion(i, TxKillBank.version(versionOf(maker, p), 0));
      }
    } catch (FerriteException e) {
      throw new AssertionError("the accounts' setup failed\n" + logs(), e);
    }
    regions =
        new TxPlacement[] {
          maker.placement(regions[0].region()), maker.placement(regions[1].region())
        };
    System.out.println("TxKillMultiProcessTest " + victim + ": " + Arrays.toString(regions));

    int victimId = -1;
    Set<Integer> victimRegions = new HashSet<>();
    if (victim != Victim.COORDINATOR) {
      for (TxPlacement p : regions) {
        assertEquals(
            lone,
            p.backups().isEmpty(),
            "tx.replicas " + (lone ? 1 : 2) + " but " + p + " (docs/TX.md)");
      }
      if (victim == Victim.PRIMARY) {
        victimId = regions[0].primary();
      } else if (victim == Victim.PARTICIPANT || lone) {
        victimId = regions[1].primary();
      } else {
        for (int s : ids.values()) {
          if (s != regions[0].primary()
              && s != regions[1].primary()
              && (regions[0].backups().contains(s) || regions[1].backups().contains(s))) {
            victimId = s;
          }
        }
        assertTrue(
            victimId >= 0,
            "no server backs a region without being a primary: " + Arrays.toString(regions));
      }
      for (TxPlacement p : regions) {
        if (p.primary() == victimId || p.backups().contains(victimId)) {
          victimRegions.add(p.region());
        }
      }
    } else {
      victimRegions.add(regions[0].region());
      victimRegions.add(regions[1].region());
    }
    int victimServer = victimId;
    String victimName =
        ids.entrySet().stream()
            .filter(e -> e.getValue() == victimServer)
            .map(Map.Entry::getKey)
            .findFirst()
            .orElse(null);

    TxKillChild child = startChild(seed.value() ^ 0x5eed);
    AtomicBoolean done = new AtomicBoolean();
    long killedAt;
    long deadAt = -1;
    try (TestThreads bg = new TestThreads(() -> done.set(true))) {
      try {
        bg.start("tx-kill-child-out", child::readLines);
        for (int w = 0; w < TRANSFER_THREADS; w++) {
          TxClient c = new TxClient(tcpClient("tx-kill-" + w));
          Random random = new Random(seed.value() + w);
          int client = w;
          bg.start("tx-kill-transfers-" + w, () -> transfers(c, client, random, done));
        }
        TxClient auditor = new TxClient(tcpClient("tx-kill-auditor"));
        bg.start("tx-kill-auditor", () -> audits(auditor, done));

        await(
            "60 transfers committed here and 20 in the client JVM",
            () -> bg.failed() || committed.size() >= 60 && child.committed.get() >= 20);
        if (victim == Victim.COORDINATOR) {
          child.killDelayNanos = 200_000 + new Random(seed.value()).nextInt(1_800_000);
          child.killAtNextCommit.set(true);
          assertTrue(
              child.process.waitFor(60, TimeUnit.SECONDS),
              "the client JVM was not killed\n" + logs());
          killedAt = child.killedAt;
        } else {
          killedAt = System.nanoTime();
          servers.get(victimName).destroyForcibly().waitFor(); // SIGKILL, mid-commits
          deadAt = awaitDead(admin, victimId);
          if (lone) {
            // No copy elsewhere: its region comes back when it does, rebuilt from its log, and
            // its locked transfers ask the decider.
            servers.put(victimName, startServer(victimName, "48m", "0", serverSets));
          }
        }
        long since = victim == Victim.COORDINATOR ? killedAt : deadAt;
        await(
            "30 transfers over the victim's regions committed after it died",
            () -> bg.failed() || committedAfter(since, victimRegions) >= 30);
        if (victim == Victim.COORDINATOR) {
          // The accounts the client JVM was committing are written again: its locks went away.
          for (int key : child.inFlightWrites()) {
            await(
                "a commit writing account " + key + " after the coordinator's death",
                () -> bg.failed() || committedWriting(killedAt, key) > 0);
          }
        } else {
          await(
              "20 commits of the client JVM after the kill",
              () -> bg.failed() || child.committedAfter(killedAt) >= 20);
        }
      } finally {
        // Also when the test fails: the threads stop, the client JVM stops (it prints END), so
        // closing bg joins them at once.
        done.set(true);
        child.stop();
      }
    }
    child.endHistory();
    assertEquals(List.of(), List.copyOf(child.failures), "the client JVM failed\n" + logs());
    if (victim != Victim.COORDINATOR) {
      assertTrue(child.ended, "the client JVM did not print END");
    }

    // Nothing stays locked: each account reads unlocked within a bounded wait (a locked one makes
    // lockFreeRead answer BUSY after 2 s; await tries again for up to 60 s).
    TxClient reader = new TxClient(tcpClient("tx-kill-reader"));
    long sum = 0;
    for (int i = 0; i < TxKillBank.ACCOUNTS; i++) {
      FatPointer p = accounts.get(i);
      sum +=
          TxKillBank.balance(
              await("account " + i + " readable and unlocked", () -> reader.lockFreeRead(p)));
    }
    // One audit of every account, committed, closes the history: a lost acknowledged write shows
    // as a read of an older version than one real time says was installed before it.
    await(
        "a final audit committed",
        () -> {
          TxKillBank.Step s = TxKillBank.audit(reader, accounts);
          Outcome o = TxKillBank.commit(s);
          long complete = System.nanoTime();
          if (o == Outcome.COMMITTED) {
            TxKillBank.record(history, FINAL_AUDIT, s, o, complete);
            return true;
          }
          TxKillBank.record(history, FINAL_AUDIT, s, o, complete);
          return false;
        });
    SerializabilityChecker.Result r = SerializabilityChecker.assertStrictlySerializable(history);
    long first = firstCommitAfter(victim == Victim.COORDINATOR ? killedAt : deadAt, victimRegions);
    System.out.printf(
        Locale.ROOT,
        "TxKillMultiProcessTest %s: %s; %d unknown here, %d in flight in the killed client; "
            + "killed -> declared DEAD %s; first commit over the victim's regions %.1f ms after %s%n",
        victim,
        r.summary(),
        unknown.get(),
        child.inFlight.size(),
        deadAt < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f ms", (deadAt - killedAt) / 1e6),
        (first - (victim == Victim.COORDINATOR ? killedAt : deadAt)) / 1e6,
        victim == Victim.COORDINATOR ? "the kill" : "it was declared DEAD");
    if (victim == Victim.COORDINATOR) {
      // Near tx.lock.lease when the dead coordinator held locks on the account, near 0 if not.
      for (int key : child.inFlightWrites()) {
        System.out.printf(
            Locale.ROOT,
            "TxKillMultiProcessTest %s: account %d (the killed client was committing it) written"
                + " again %.1f ms after the kill%n",
            victim,
            key,
            (firstWriteAfter(killedAt, key) - killedAt) / 1e6);
      }
    }
    assertEquals(List.of(), List.copyOf(badAudits), "committed audits that saw another total");
    assertEquals(TxKillBank.ACCOUNTS * TxKillBank.START, sum, "lock-free reads of every account");
  }

  // --- the workload of this JVM ---

  private void transfers(TxClient c, int client, Random random, AtomicBoolean done) {
    while (!done.get()) {
      TxKillBank.Step s;
      try {
        s = TxKillBank.transfer(c, random, accounts, nextTag());
      } catch (FerriteException e) {
        continue; // a read failed: nothing sent for commit
      }
      Outcome o = TxKillBank.commit(s);
      long complete = System.nanoTime();
      TxKillBank.record(history, client, s, o, complete);
      if (o == Outcome.COMMITTED && !s.written().isEmpty()) {
        Set<Integer> written = new HashSet<>();
        s.written().forEach(i -> written.add(accounts.get(i).region()));
        committed.add(new Committed(s.invoke(), complete, written));
      } else if (o == Outcome.UNKNOWN) {
        unknown.incrementAndGet();
      }
    }
  }

  private void audits(TxClient c, AtomicBoolean done) throws InterruptedException {
    while (!done.get()) {
      TxKillBank.Step s;
      try {
        s = TxKillBank.audit(c, accounts);
      } catch (FerriteException e) {
        continue;
      }
      Outcome o = TxKillBank.commit(s);
      TxKillBank.record(history, AUDITOR, s, o, System.nanoTime());
      long total = Arrays.stream(s.balances()).sum();
      if (o == Outcome.COMMITTED && total != TxKillBank.ACCOUNTS * TxKillBank.START) {
        badAudits.add(Arrays.toString(s.balances()) + " (total " + total + ")");
      }
      Thread.sleep(5);
    }
  }

  private long nextTag() {
    long t = tags.getAndIncrement();
    assertTrue(t < TxKillBank.CHILD_TAGS, "tags of this JVM exhausted");
    return t;
  }

  private long committedAfter(long since, Set<Integer> regions) {
    return committed.stream()
        .filter(c -> c.invoke() > since && c.regions().stream().anyMatch(regions::contains))
        .count();
  }

  private long committedWriting(long since, int account) {
    long key = account;
    return history.transactions().stream()
        .filter(t -> t.outcome() == Outcome.COMMITTED && t.invoke() > since)
        .filter(
            t ->
                t.ops().stream()
                    .anyMatch(op -> op.kind() == TxHistory.Kind.WRITE && op.key() == key))
        .count();
  }

  private long firstWriteAfter(long since, int account) {
    long key = account;
    return history.transactions().stream()
        .filter(t -> t.outcome() == Outcome.COMMITTED && t.complete() > since)
        .filter(
            t ->
                t.ops().stream()
                    .anyMatch(op -> op.kind() == TxHistory.Kind.WRITE && op.key() == key))
        .mapToLong(TxHistory.Txn::complete)
        .min()
        .orElse(Long.MAX_VALUE);
  }

  private long firstCommitAfter(long since, Set<Integer> regions) {
    return committed.stream()
        .filter(c -> c.complete() > since && c.regions().stream().anyMatch(regions::contains))
        .mapToLong(Committed::complete)
        .min()
        .orElse(Long.MAX_VALUE);
  }

  // --- the cluster ---

  private static long alive(FerriteClient c) {
    return c.status().members().stream()
        .filter(m -> m.info().state() == ServerState.ALIVE && m.regions() > 0)
        .count();
  }

  /** When the master answers that {@code server} is DEAD (polled every 10 ms, for up to 60 s). */
  private long awaitDead(FerriteClient admin, int server) throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT_NANOS;
    while (System.nanoTime() < deadline) {
      try {
        for (MemberInfo m : admin.refreshMembers()) {
          if (m.serverId() == server && m.state() == ServerState.DEAD) {
            return System.nanoTime();
          }
        }
      } catch (FerriteException e) {
        // The master is busy; ask again.
      }
      Thread.sleep(10);
    }
    throw new AssertionError("server " + server + " never declared DEAD\n" + logs());
  }

  /** An account in {@code region} (allocated beside a pointer into it: same region). */
  private static FatPointer make(TxClient c, int region) {
    Transaction t = c.txBegin();
    FatPointer p = t.txAlloc(16, new FatPointer(region, 0, 1, 0));
    t.txWrite(p, TxKillBank.account(TxKillBank.START, 0));
    assertTrue(t.txCommit().committed(), "the setup of " + p);
    return p;
  }

  /** The version of {@code p} now, read by a one-object transaction. */
  private static long versionOf(TxClient c, FatPointer p) {
    Transaction t = c.txBegin();
    t.txRead(p);
    long v = t.readVersions().get(p);
    assertTrue(t.txCommit().committed());
    return v;
  }

  // --- the client JVM ---

  private TxKillChild startChild(long seed) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(
        List.of(
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            System.getProperty("java.class.path"),
            TxKillClient.class.getName(),
            clusterUri(),
            clusterId,
            secret().toString(),
            TxKillBank.encode(accounts),
            Long.toString(seed),
            Integer.toString(CHILD_THREADS)));
    Process p =
        new ProcessBuilder(cmd)
            .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("client.log").toFile()))
            .start();
    processes.add(p); // stopped (SIGKILL) after the test, also on failure
    return new TxKillChild(p, history);
  }
}
