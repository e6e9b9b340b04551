package io.ferrite.nodes.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeType;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The master's lease table on its own ({@link NodesMasterLeases}): what a mutation of a leased node
 * waits for, what is granted while it waits, and what the WATCH answers say. No cluster, no clock
 * assertions: only what completes and what does not.
 */
class NodesMasterLeasesTest {
  /** Long enough that nothing expires while a test runs, unless it wants it to. */
  private static final Duration LONG = Duration.ofSeconds(60);

  private NodesMasterLeases leases;

  @AfterEach
  void close() {
    if (leases != null) {
      leases.close();
    }
  }

  private static Node node(long id) {
    return new Node(id, NodeType.KEYVALUE, "", "", true, true, 0, 0);
  }

  /** A WATCH answer: holder, epoch, seq, lease, ids. */
  private record Answer(long holder, long epoch, long seq, long lease, List<Long> ids) {}

  private static Answer read(CompletableFuture<ByteBuffer> f) throws Exception {
    Wire.Reader r = new Wire.Reader(f.get(30, TimeUnit.SECONDS), "watch");
    long h = r.i64("holder");
    long e = r.i64("epoch");
    long s = r.i64("seq");
    long l = r.i64("lease");
    int n = r.i32("count");
    Long[] ids = new Long[n];
    for (int i = 0; i < n; i++) {
      ids[i] = r.i64("id");
    }
    r.end();
    return new Answer(h, e, s, l, List.of(ids));
  }

  private Answer register() throws Exception {
    return read(leases.watch(0, 0, 0, Long.MAX_VALUE));
  }

  @Test
  void aMutationOfALeasedNodeWaitsForTheHoldersAcknowledgement() throws Exception {
    leases = new NodesMasterLeases(LONG);
    leases.recovered(1);
    Node dir = node(10);
    Node kv = node(11);
    Answer a = register();
    NodesMasterLeases.Grant g = leases.grant(a.holder(), List.of(dir, kv), true);
    assertTrue(g.leaseNanos() > 0);
    // The holder parks its WATCH.
    CompletableFuture<ByteBuffer> parked = leases.watch(a.holder(), a.epoch(), 0, Long.MAX_VALUE);
    assertFalse(parked.isDone());
    // A mutation of kv is held back, and kv is revoked: the WATCH brings its id.
    NodesMasterLeases.Held held =
        assertThrows(NodesMasterLeases.Held.class, () -> leases.enter(kv));
    assertEquals(11, held.ids[0]);
    Set<Long> mine = new HashSet<>();
    CompletableFuture<Void> revoked = leases.invalidate(held.ids, mine);
    Answer told = read(parked);
    assertEquals(List.of(11L), told.ids());
    assertEquals(1, told.seq());
    // Until the holder acknowledges: no new lease on kv (nor to this holder), no other mutation.
    assertFalse(revoked.isDone());
    assertEquals(0, leases.grant(a.holder(), List.of(dir, kv), true).leaseNanos());
    Answer other = register();
    assertEquals(0, leases.grant(other.holder(), List.of(dir, kv), true).leaseNanos());
    assertThrows(NodesMasterLeases.Held.class, () -> leases.enter(kv));
    // A WATCH that acknowledges an older count does not release the writer.
    read(leases.watch(a.holder(), a.epoch(), 0, 0));
    assertFalse(revoked.isDone());
    // Acknowledged: the writer goes on, and its own mark does not hold it back.
    CompletableFuture<ByteBuffer> next = leases.watch(a.holder(), a.epoch(), 1, Long.MAX_VALUE);
    revoked.get(30, TimeUnit.SECONDS);
    NodesMasterLeases.MINE.set(mine);
    try {
      long[] entered = leases.enter(kv);
      // Between enter and exit (the commit) no lease either.
      assertEquals(0, leases.grant(other.holder(), List.of(dir, kv), true).leaseNanos());
      leases.exit(entered);
    } finally {
      NodesMasterLeases.MINE.remove();
    }
    leases.release(mine);
    assertTrue(leases.grant(other.holder(), List.of(dir, kv), true).leaseNanos() > 0);
    // The holder's lease on dir was not revoked: a mutation of dir is held back too.
    assertThrows(NodesMasterLeases.Held.class, () -> leases.enter(dir));
    assertFalse(next.isDone());
    assertEquals(1, leases.counts()[0]);
  }

  @Test
  void aHolderThatNeverAcknowledgesReleasesTheWriterWhenItsLeaseEnds() throws Exception {
    leases = new NodesMasterLeases(Duration.ofMillis(200));
    leases.recovered(1);
    Node kv = node(5);
    Answer a = register();
    assertTrue(leases.grant(a.holder(), List.of(kv), true).leaseNanos() > 0);
    Set<Long> mine = new HashSet<>();
    CompletableFuture<Void> revoked = leases.invalidate(new long[] {5}, mine);
    // Completes without any acknowledgement (the test's get would time out otherwise).
    revoked.get(30, TimeUnit.SECONDS);
    assertEquals(1, leases.counts()[1], "released by the lease's end");
    // The holder was reset: its next WATCH says so with a new epoch (or a new holder id, if it was
    // forgotten meanwhile).
    Answer after = read(leases.watch(a.holder(), a.epoch(), 0, 0));
    assertTrue(after.epoch() != a.epoch() || after.holder() != a.holder());
    leases.release(mine);
  }

  @Test
  void containersPendingHoldersAndUnknownHoldersGetNoLease() throws Exception {
    leases = new NodesMasterLeases(LONG);
    leases.recovered(1);
    Node kv = node(7);
    Answer a = register();
    assertEquals(0, leases.grant(a.holder(), List.of(kv), false).leaseNanos(), "not leasable");
    assertEquals(0, leases.grant(a.holder(), List.of(), true).leaseNanos(), "the root");
    assertEquals(-1, leases.grant(a.holder() + 1, List.of(kv), true).epoch(), "unknown holder");
    assertTrue(leases.grant(a.holder(), List.of(kv), true).leaseNanos() > 0);
    // A released holder keeps nothing: a mutation goes through at once.
    Answer released = read(leases.watch(a.holder(), a.epoch(), 0, -1));
    assertNotEquals(a.epoch(), released.epoch());
    leases.exit(leases.enter(kv));
  }

  @Test
  void aRecoveredNodeWaitsOutOneLeaseAfterStart() throws Exception {
    leases = new NodesMasterLeases(Duration.ofMillis(300));
    leases.recovered(100);
    Node old = node(50);
    Node fresh = node(150);
    leases.exit(leases.enter(fresh)); // made by this master: nobody can have kept it
    NodesMasterLeases.Held held =
        assertThrows(NodesMasterLeases.Held.class, () -> leases.enter(old));
    Set<Long> mine = new HashSet<>();
    leases.invalidate(held.ids, mine).get(30, TimeUnit.SECONDS);
    NodesMasterLeases.MINE.set(mine);
    try {
      leases.exit(leases.enter(old));
    } finally {
      NodesMasterLeases.MINE.remove();
    }
    leases.release(mine);
  }
}
