package io.ferrite.kv.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.kv.ShardLayout;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kv lease's length (docs/KV.md "Leases"): {@code kv.lease} from the server's configuration,
 * cut to half the dead timeout a master told the server at registration when that is shorter. A
 * server configured with a longer dead timeout than its master's would otherwise keep serving a
 * replicated copy after the master promoted its backup.
 */
@Timeout(60) // a hang guard only: nothing here is timed
class KvLeaseTest {

  /** A context that answers only what the lease asks: its acknowledgement and the master's. */
  private static ServiceContext context(long ackSentNanos, OptionalLong masterDeadMillis) {
    return context(() -> ackSentNanos, masterDeadMillis);
  }

  /** As above, with an acknowledgement that may move (a heartbeat acknowledged later). */
  private static ServiceContext context(LongSupplier ackSentNanos, OptionalLong masterDeadMillis) {
    return (ServiceContext)
        Proxy.newProxyInstance(
            ServiceContext.class.getClassLoader(),
            new Class<?>[] {ServiceContext.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "masterAckSentNanos" -> OptionalLong.of(ackSentNanos.getAsLong());
                  case "masterDeadTimeoutMillis" -> masterDeadMillis;
                  case "serverId" -> 7;
                  case "toString" -> "test context";
                  default -> throw new UnsupportedOperationException(method.getName());
                });
  }

  /**
   * Waits until the lease's poll granted it (after one verify), and returns whether it is valid.
   */
  private static boolean validOnceGranted(KvLease lease, AtomicInteger verified)
      throws InterruptedException {
    while (verified.get() == 0 || lease.toString().contains("not granted")) {
      Thread.sleep(5);
    }
    return lease.valid();
  }

  @Test
  void aMastersShorterDeadTimeoutCutsTheLease() throws InterruptedException {
    // Acknowledged 600 ms ago; the server's own key says 10 s, the master declares DEAD at 1 s:
    // the lease is 500 ms and has run out.
    long sent = System.nanoTime() - Duration.ofMillis(600).toNanos();
    AtomicInteger verified = new AtomicInteger();
    try (KvLease lease =
        new KvLease(
            context(sent, OptionalLong.of(1000)),
            Duration.ofSeconds(10),
            verified::incrementAndGet)) {
      assertFalse(
          validOnceGranted(lease, verified),
          "a lease longer than half the master's dead timeout: " + lease);
    }
  }

  @Test
  void withoutTheMastersWordTheConfiguredLeaseHolds() throws InterruptedException {
    // The same acknowledgement from an older master (no dead timeout in its answer), or a master
    // whose timeout is longer: 10 s from 600 ms ago is still running.
    long sent = System.nanoTime() - Duration.ofMillis(600).toNanos();
    for (OptionalLong master : new OptionalLong[] {OptionalLong.empty(), OptionalLong.of(30_000)}) {
      AtomicInteger verified = new AtomicInteger();
      try (KvLease lease =
          new KvLease(context(sent, master), Duration.ofSeconds(10), verified::incrementAndGet)) {
        assertTrue(validOnceGranted(lease, verified), "master " + master + ": " + lease);
      }
    }
  }

  @TempDir Path dir;

  private static long word(MappedRegion r) {
    return r.getLongAcquire(ShardLayout.LEASE_OFFSET);
  }

  /**
   * Waits until {@code r}'s lease word holds something other than {@code old} (the poll thread
   * writes it), and returns it.
   */
  private static long awaitChange(MappedRegion r, long old) throws InterruptedException {
    long w;
    while ((w = word(r)) == old) {
      Thread.sleep(5);
    }
    return w;
  }

  /**
   * The lease word same-host (shm) readers check (docs/KV.md "Leases"): 0 until the lease is
   * granted, then its expiry, renewed with it; 0 for good once the shard withdraws the region
   * (retired, freed), while the regions still published go on being renewed.
   */
  @Test
  void theLeaseWordCarriesTheExpiryUntilTheRegionIsWithdrawn() throws InterruptedException {
    long period = Duration.ofSeconds(10).toNanos();
    AtomicLong sent = new AtomicLong(System.nanoTime());
    AtomicInteger verified = new AtomicInteger();
    // A verify that blocks until the regions are published: the words are 0 before the grant.
    java.util.concurrent.CountDownLatch published = new java.util.concurrent.CountDownLatch(1);
    MappedRegion a = MappedRegion.create(dir.resolve("a"), 1, 4096, 0x5EED);
    MappedRegion b = MappedRegion.create(dir.resolve("b"), 2, 4096, 0x5EEE);
    try (KvLease lease =
        new KvLease(
            context(sent::get, OptionalLong.empty()),
            Duration.ofNanos(period),
            () -> {
              verified.incrementAndGet();
              try {
                published.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            })) {
      lease.publish(a);
      lease.publish(b);
      assertEquals(0, word(a), "a lease not granted yet publishes 0");
      published.countDown();
      long first = sent.get() + period;
      assertEquals(first, awaitChange(a, 0), "granted: the lease's expiry");
      assertEquals(first, awaitChange(b, 0));
      assertTrue(lease.valid());

      // Retired (or about to be freed): 0 at once, and never renewed again.
      lease.withdraw(a);
      assertEquals(0, word(a));
      assertFalse(lease.publishes(a));
      long later = sent.get() + 1_000_000;
      sent.set(later); // the next heartbeat acknowledged: the lease is renewed from it
      assertEquals(later + period, awaitChange(b, first), "renewed");
      assertEquals(0, word(a), "a withdrawn region's word was written again");

      // A region the shard makes while the lease holds starts with the current expiry.
      MappedRegion c = MappedRegion.create(dir.resolve("c"), 3, 4096, 0x5EEF);
      try {
        lease.publish(c);
        assertEquals(later + period, word(c));
        lease.withdraw(c);
      } finally {
        c.closeAndDelete();
      }
    } finally {
      a.closeAndDelete();
      b.closeAndDelete();
    }
  }

  /**
   * A lapsed lease (the last acknowledged heartbeat too old) leaves no deadline in the future in
   * the word, so a same-host reader refuses.
   */
  @Test
  void aLapsedLeasesWordIsInThePast() throws InterruptedException {
    long sent = System.nanoTime() - Duration.ofMillis(600).toNanos();
    AtomicInteger verified = new AtomicInteger();
    MappedRegion a = MappedRegion.create(dir.resolve("a"), 1, 4096, 0x5EED);
    try (KvLease lease =
        new KvLease(
            context(sent, OptionalLong.of(1000)),
            Duration.ofSeconds(10),
            verified::incrementAndGet)) {
      lease.publish(a);
      assertFalse(validOnceGranted(lease, verified));
      long w = awaitChange(a, 0);
      assertTrue(System.nanoTime() - w >= 0, "a lapsed lease's word is in the future: " + w);
    } finally {
      a.closeAndDelete();
    }
  }
}
