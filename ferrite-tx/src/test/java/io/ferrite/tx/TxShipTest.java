package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Function shipping ({@link TxClient#ship}, FaRM §3.4): a function runs at the primary of its
 * objects as a single-server transaction, serializable with ordinary transactions on the same
 * objects; aborts leave nothing; bad calls get clear errors.
 */
@ExtendWith(SeedExtension.class)
class TxShipTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;
  TxClient a;
  TxClient b;

  void start() throws Exception {
    start(1);
  }

  void start(int replicas) throws Exception {
    cluster = new TxCluster(dir, 2, false, replicas);
    a = new TxClient(cluster.client());
    b = new TxClient(cluster.client());
  }

  static byte[] ptr(FatPointer p) {
    Wire.Writer w = new Wire.Writer();
    FatPointer.writeTo(w, p);
    return w.toArray();
  }

  static FatPointer ptr(byte[] b) {
    return FatPointer.readFrom(new Wire.Reader(ByteBuffer.wrap(b), "ptr"));
  }

  /**
   * Shipped increments and ordinary two-phase transactions that also add to the counter (one object
   * read on another server, so they lock the counter remotely) race on one counter: every committed
   * addition is there exactly once, and each shipped call's output is the value it made. With two
   * copies, the counter's primary is then stopped: its promoted backup holds every committed
   * addition too (shipped commits are forwarded like any single-server commit).
   */
  @ParameterizedTest(name = "replicas {0}")
  @ValueSource(ints = {1, 2})
  void shippedAndOrdinaryTransactionsSerialize(int replicas, Random random) throws Exception {
    start(replicas);
    FatPointer counter = TxCommitTest.make(a, TxCommitTest.num(0));
    FatPointer elsewhere = TxCommitTest.make(b, TxCommitTest.num(7));
    AtomicLong total = new AtomicLong();
    ConcurrentLinkedQueue<Long> seen = new ConcurrentLinkedQueue<>();
    try (TestThreads bg = new TestThreads()) {
      for (int t = 0; t < 4; t++) {
        boolean shipper = t % 2 == 0;
        Random r = new Random(random.nextLong());
        bg.start(
            (shipper ? "shipper-" : "two-phase-") + t,
            () -> {
              for (int i = 0; i < 150; i++) {
                long d = 1 + r.nextInt(5);
                if (shipper) {
                  Shipped s = a.ship("test.add", counter, TxCommitTest.num(d));
                  if (s.committed()) {
                    total.addAndGet(d);
                    seen.add(TxCommitTest.num(s.output()));
                  }
                } else {
                  Transaction tx = b.txBegin();
                  long v = TxCommitTest.num(tx.txRead(counter));
                  tx.txRead(elsewhere);
                  tx.txWrite(counter, TxCommitTest.num(v + d));
                  if (tx.txCommit().committed()) {
                    total.addAndGet(d);
                  }
                }
              }
            });
      }
      // Closing bg joins the threads; a failure in one fails the test.
    }
    assertEquals(
        total.get(), TxCommitTest.num(a.lockFreeRead(counter)), "every committed addition once");
    assertTrue(total.get() > 0, "some transactions committed");
    // Each shipped output is a value the counter held once, after that call's addition.
    assertEquals(seen.size(), seen.stream().distinct().count(), "outputs are distinct: " + seen);
    if (replicas == 2) {
      int primary = a.view(counter.region()).primary();
      MemoryServer victim =
          cluster.servers.stream().filter(m -> m.serverId() == primary).findFirst().orElseThrow();
      cluster.servers.remove(victim);
      victim.close();
      TxClient fresh = new TxClient(cluster.client());
      assertEquals(
          total.get(),
          TxCommitTest.num(fresh.lockFreeRead(counter)),
          "the promoted backup has every committed addition");
      assertTrue(fresh.view(counter.region()).primary() != primary, "read at the promoted copy");
    }
  }

  @Test
  void aFunctionThatThrowsChangesNothingAndSaysWhy() throws Exception {
    start();
    FatPointer counter = TxCommitTest.make(a, TxCommitTest.num(41));
    FerriteException e =
        assertThrows(FerriteException.class, () -> a.ship("test.throws", counter, new byte[0]));
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.getMessage().contains("test.throws refuses"), e.getMessage());
    assertEquals(41, TxCommitTest.num(a.lockFreeRead(counter)));
    // Still writable: nothing stayed locked.
    assertEquals(42, TxCommitTest.num(a.ship("test.add", counter, TxCommitTest.num(1)).output()));
  }

  @Test
  void anUnknownFunctionIsNamedWithTheInstalledOnes() throws Exception {
    start();
    FatPointer counter = TxCommitTest.make(a, TxCommitTest.num(0));
    FerriteException e =
        assertThrows(FerriteException.class, () -> a.ship("test.nope", counter, new byte[0]));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains("'test.nope' is not installed"), e.getMessage());
    assertTrue(e.getMessage().contains("test.add"), e.getMessage());
  }

  @Test
  void aFunctionTouchesOnlyObjectsOfItsPrimary() throws Exception {
    start();
    FatPointer counter = TxCommitTest.make(a, TxCommitTest.num(1));
    FatPointer local = TxCommitTest.make(a, TxCommitTest.num(10));
    FatPointer remote = TxCommitTest.make(b, TxCommitTest.num(100));
    assertEquals(11, TxCommitTest.num(a.ship("test.add-from", counter, ptr(local)).output()));
    FerriteException e =
        assertThrows(FerriteException.class, () -> a.ship("test.add-from", counter, ptr(remote)));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("touches only objects of its primary"), e.getMessage());
    assertEquals(11, TxCommitTest.num(a.lockFreeRead(counter)), "nothing applied");
  }

  @Test
  void aFreedAddressIsAStalePointer() throws Exception {
    start();
    FatPointer counter = TxCommitTest.make(a, TxCommitTest.num(1));
    Transaction t = a.txBegin();
    t.txFree(counter);
    assertTrue(t.txCommit().committed());
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> a.ship("test.add", counter, TxCommitTest.num(1)));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
  }

  /** A function may allocate beside its address; the new object is committed with the rest. */
  @Test
  void aFunctionAllocatesBesideItsAddress(Random random) throws Exception {
    start();
    FatPointer head = TxCommitTest.make(a, new byte[32]);
    byte[] value = TxCommitTest.bytes(random, 8);
    Shipped s = a.ship("test.push", head, value);
    assertTrue(s.committed(), s.result().toString());
    FatPointer node = ptr(s.output());
    assertEquals(head.region(), node.region(), "same region as the address");
    assertArrayEquals(value, b.lockFreeRead(node));
    assertEquals(node, ptr(b.lockFreeRead(head)));
  }
}
