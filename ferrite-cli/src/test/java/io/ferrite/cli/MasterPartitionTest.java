package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.nodes.Nodes;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A network partition of a master group's leader from the other two ({@link NetHosts#isolate}): 3
 * masters on hosts 1-3 (Raft), a memory server on host 4, a writer in the test JVM (the root
 * namespace) given all three masters. While the leader's host is cut off, a client on that host,
 * talking only to its master, is refused (NOT_LEADER, UNAVAILABLE or TIMEOUT, never a success: the
 * minority cannot commit), while the other two elect a leader and the writer carries on. After the
 * heal the old leader follows the new one and catches up to its index; every acknowledged write is
 * on the new leader and the write tried on the minority side is nowhere: no split brain.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class MasterPartitionTest extends HostsClusterTest {
  static final String CLUSTER = "master-partition-test";

  /** How the CLI prints a failed command: {@code error: <CODE>: ...}. */
  private static final Pattern REFUSED = Pattern.compile("error: (NOT_LEADER|UNAVAILABLE|TIMEOUT)");

  private FerriteClient client() {
    FerriteClient c =
        Ferrite.connect(
            groupUri(3),
            ClientOptions.builder(credentials)
                .fabric("tcp")
                .clientName("master-partition-test")
                .connectTimeout(Duration.ofSeconds(2))
                .rpcTimeout(Duration.ofSeconds(2))
                // Short, so that a call stuck on the cut-off side gives up soon after the test
                // stops (or fails); the writer counts a failed call as unknown and goes on.
                .masterDeadline(Duration.ofSeconds(5))
                .build());
    clients.add(c);
    return c;
  }

  @Test
  void theIsolatedLeaderAcknowledgesNothingAndFollowsAfterTheHeal(Random random) throws Exception {
    newHostsCluster(4, CLUSTER, "ferrite-master-partition-");
    String[] sets = {"journal.fsync=true", "block.size=64k", "server.dead.timeout=30s"};
    for (int m = 1; m <= 3; m++) {
      startGroupMasterOn(m, 3, "master" + m, sets);
    }
    int old = await("a leader", () -> leaderHost(3));
    startServerOn(4, groupUri(3), "s4", "64m", "0", "block.size=64k");
    await("an ALIVE server", () -> serversAlive(groupUri(3), 1));

    // The writer: owned allocations (each one journaled mutation), each under a new owner.
    Map<String, String> acknowledged = new ConcurrentHashMap<>();
    AtomicInteger acks = new AtomicInteger();
    AtomicLong cutAt = new AtomicLong(Long.MAX_VALUE);
    AtomicInteger acksIssuedAfterCut = new AtomicInteger();
    AtomicLong firstAckAfterCut = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    FerriteClient writer = client();
    int elected;
    try (TestThreads load = new TestThreads(() -> stop.set(true))) {
      load.start(
          "master-partition-writer",
          () -> {
            for (int i = 0; !stop.get(); i++) {
              String owner = "w-" + i;
              long issued = System.nanoTime();
              try {
                List<BlockRef> got = writer.allocate(1, "", false, owner);
                acknowledged.put(owner, MasterKillTest.where(got.get(0)));
                acks.incrementAndGet();
                if (issued > cutAt.get()) {
                  firstAckAfterCut.compareAndSet(0, System.nanoTime());
                  acksIssuedAfterCut.incrementAndGet();
                }
              } catch (FerriteException e) {
                // The leader was cut off under this call: its outcome is unknown (the owner is
                // never reused, so it is not checked); the client follows the new leader.
                Thread.sleep(20);
              }
            }
          });
      int before = 50 + random.nextInt(100);
      await(before + " acknowledgements", () -> acks.get() >= before);

      cutAt.set(System.nanoTime());
      hosts.isolate(old);
      // A client on the cut-off host, given only its master: refused, whatever the master's
      // role is at that moment (a leader that cannot commit, a candidate, a follower).
      String minority = cliOn(old, old, "fs", "mkdir", "/minority");
      assertTrue(
          REFUSED.matcher(minority).find() && !minority.contains("== exit 0"),
          "the isolated master must refuse the write:\n" + minority + logs());

      elected =
          await(
              "a leader among the other two",
              () -> {
                Integer l = leaderHost(3);
                return l != null && l != old ? l : null;
              });
      int during = 20 + random.nextInt(50);
      await(
          during + " acknowledgements issued after the cut",
          () -> acksIssuedAfterCut.get() >= during);

      hosts.heal(old);
      MasterStub.MasterInfo caughtUp =
          await(
              "master " + old + " following master " + elected,
              () -> {
                MasterStub.MasterInfo leader = masterInfo(elected);
                MasterStub.MasterInfo m = masterInfo(old);
                return leader != null
                        && m != null
                        && m.roleName().equals("follower")
                        && m.term() == leader.term()
                        && m.leader().equals("tcp://" + hosts.address(elected) + ":" + port)
                        && m.appliedIndex() >= leader.appliedIndex()
                    ? m
                    : null;
              });
      assertEquals("follower", caughtUp.roleName());
      assertNotEquals(old, elected);
      stop.set(true);
    }

    await("a leader after the heal", () -> leaderHost(3));
    FerriteClient check = client();
    for (Map.Entry<String, String> e : acknowledged.entrySet()) {
      List<BlockRef> owned = check.owned(e.getKey());
      assertEquals(1, owned.size(), "acknowledged allocation " + e.getKey() + " lost\n" + logs());
      assertEquals(e.getValue(), MasterKillTest.where(owned.get(0)), e.getKey());
    }
    assertFalse(
        new Nodes(check).exists("/minority"),
        "the write the cut-off master was asked for must not exist anywhere\n" + logs());
    System.out.printf(
        Locale.ROOT,
        "master partition: leader %d cut off; master %d elected; %d acknowledged (%d issued after"
            + " the cut, the first acknowledged %.0f ms after it)%n",
        old,
        elected,
        acks.get(),
        acksIssuedAfterCut.get(),
        (firstAckAfterCut.get() - cutAt.get()) / 1e6);
  }
}
