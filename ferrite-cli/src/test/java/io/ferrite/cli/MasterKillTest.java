package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The master's group commit under SIGKILL: a master (its own JVM, journal fsync on) serves several
 * writer threads that allocate persistently owned blocks and free some of them; it is SIGKILLed
 * after a seeded number of acknowledgements, restarted on the same directory, and every
 * acknowledged allocation is owned again and every acknowledged free stays freed (group commit
 * acknowledges nothing before its fsync). Every process is killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class MasterKillTest extends ProcessClusterTest {
  static final String CLUSTER = "master-kill-test";
  static final int WRITERS = 8;

  /** The master fsyncs its journal, with small blocks and a long dead timeout. */
  static final String[] MASTER_SETS = {
    "journal.fsync=true", "block.size=64k", "server.dead.timeout=30s"
  };

  private FerriteClient client(boolean session) {
    FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials)
                .fabric("tcp")
                .session(session)
                .clientName("master-kill-test")
                // Fail at once when the master dies (not wait it out): this test counts what
                // was acknowledged before the kill, FsRideThroughMultiProcessTest the ride.
                .masterDeadline(java.time.Duration.ZERO)
                .build());
    clients.add(c);
    return c;
  }

  private boolean serverAlive() {
    return CliProcesses.oneServerAlive(port, credentials);
  }

  /** Compares blocks by where they are (a restarted master rebuilds the same refs). */
  static String where(BlockRef b) {
    return b.region().serverId() + "/" + b.region().regionId() + "@" + b.offset();
  }

  @Test
  void everyAcknowledgedMutationSurvivesASigkilledMaster(Random random) throws Exception {
    newCluster(CLUSTER, "ferrite-master-kill-");
    Process master = startMaster("master", MASTER_SETS);
    startServer("s1", "64m", "0");
    await("an ALIVE server", this::serverAlive);

    // owner -> block, for each acknowledged allocation; owners whose free was acknowledged.
    Map<String, String> allocated = new ConcurrentHashMap<>();
    List<String> freed = new CopyOnWriteArrayList<>();
    List<String> unknown = new CopyOnWriteArrayList<>(); // a free the kill cut short
    AtomicInteger acks = new AtomicInteger();
    List<Throwable> unexpected = new CopyOnWriteArrayList<>();
    List<Thread> writers = new ArrayList<>();
    for (int t = 0; t < WRITERS; t++) {
      FerriteClient c = client(true);
      long seed = random.nextLong();
      int id = t;
      writers.add(
          new Thread(
              () -> {
                Random rnd = new Random(seed);
                List<String> mine = new ArrayList<>();
                List<BlockRef> blocks = new ArrayList<>();
                try {
                  for (int i = 0; ; i++) {
                    if (!mine.isEmpty() && rnd.nextInt(3) == 0) {
                      int k = rnd.nextInt(mine.size());
                      String owner = mine.remove(k);
                      unknown.add(owner);
                      c.free(List.of(blocks.remove(k)));
                      freed.add(owner);
                      unknown.remove(owner);
                    } else {
                      String owner = "w" + id + "-" + i;
                      List<BlockRef> got = c.allocate(1, "", false, owner);
                      allocated.put(owner, where(got.get(0)));
                      mine.add(owner);
                      blocks.add(got.get(0));
                    }
                    acks.incrementAndGet();
                  }
                } catch (RuntimeException e) {
                  // The master died under this call: its outcome is unknown. Anything else is not.
                  if (!(e instanceof io.ferrite.fabric.FerriteException)) {
                    unexpected.add(e);
                  }
                }
              },
              "master-kill-writer-" + t));
    }
    writers.forEach(Thread::start);
    int killAt = 100 + random.nextInt(400);
    await(killAt + " acknowledged mutations", () -> acks.get() >= killAt || !unexpected.isEmpty());
    master.destroyForcibly().waitFor(); // SIGKILL, mid-stream
    for (Thread w : writers) {
      w.join(TIMEOUT_NANOS / 1_000_000);
      assertTrue(!w.isAlive(), w.getName() + " still running\n" + logs());
    }
    assertEquals(List.of(), unexpected);
    int n = acks.get();

    startMaster("master", MASTER_SETS);
    // With a session: OWNED answers only a live session (docs/SECURITY.md).
    FerriteClient check = await("the restarted master", () -> client(true));
    int checked = 0;
    for (Map.Entry<String, String> e : allocated.entrySet()) {
      if (unknown.contains(e.getKey())) {
        continue; // freed or not: both are right
      }
      List<BlockRef> owned = check.owned(e.getKey());
      if (freed.contains(e.getKey())) {
        assertEquals(List.of(), owned, "acknowledged free of " + e.getKey() + " lost\n" + logs());
      } else {
        assertEquals(1, owned.size(), "acknowledged allocation " + e.getKey() + " lost\n" + logs());
        assertEquals(e.getValue(), where(owned.get(0)), e.getKey());
      }
      checked++;
    }
    assertTrue(n >= killAt && checked > 0, "acknowledged: " + n + ", checked " + checked);
  }
}
