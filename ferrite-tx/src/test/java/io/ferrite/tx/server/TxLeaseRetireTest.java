package io.ferrite.tx.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Access;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.tx.TxLeaseWord;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tx lease's lapse and regrant (docs/TX.md "Leases"), without a cluster: a context whose master
 * acknowledgement the test moves (as kv's KvLeaseTest does). Two regions served under it; the
 * acknowledgements stop: RPCs ({@link TxLease#check}), one-sided ops ({@link MappedRegion#check})
 * and the lease word refuse both; the master then no longer names this server primary of A, and an
 * acknowledgement arrives: the lease is granted again only after {@code verify}, which retired A
 * for good (ops refused, word 0, never renewed) while B serves again. Nothing is timed: the test
 * waits (bounded by the hang guard) for the lease's thread.
 */
@Timeout(60) // a hang guard only
class TxLeaseRetireTest {
  @TempDir Path dir;

  private static ServiceContext context(AtomicLong ackSentNanos) {
    return (ServiceContext)
        Proxy.newProxyInstance(
            ServiceContext.class.getClassLoader(),
            new Class<?>[] {ServiceContext.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "masterAckSentNanos" ->
                      ackSentNanos.get() == 0
                          ? OptionalLong.empty() // not registered yet
                          : OptionalLong.of(ackSentNanos.get());
                  case "masterDeadTimeoutMillis" -> OptionalLong.empty();
                  case "serverId" -> 7;
                  case "toString" -> "test context";
                  default -> throw new UnsupportedOperationException(method.getName());
                });
  }

  private static long word(MappedRegion m) {
    return m.getLongAcquire(TxLeaseWord.offset(m.length()));
  }

  private static ErrorCode read(MappedRegion m) {
    return m.check(m.readKey(), 0, 64, Access.READ);
  }

  @Test
  void aLapsedLeaseIsGrantedAgainOnlyAfterDeposedRegionsAreRetired() throws Exception {
    // No acknowledgement until the lease is set up: its thread polls from the constructor on, and
    // a verify before self is set would fail (and be counted) once.
    AtomicLong sent = new AtomicLong();
    AtomicInteger verified = new AtomicInteger();
    AtomicReference<List<TxRegion>> held = new AtomicReference<>();
    AtomicReference<TxLease> self = new AtomicReference<>();
    MappedRegion ma = MappedRegion.create(dir.resolve("a"), 1, 8192, 0x5EED);
    MappedRegion mb = MappedRegion.create(dir.resolve("b"), 2, 8192, 0x5EEE);
    TxRegion a = new TxRegion(1, ma, 4096, 1000, 1, List.of(2));
    TxRegion b = new TxRegion(2, mb, 4096, 1000, 1, List.of(2));
    held.set(List.of(a, b));
    try (TxLease lease =
        new TxLease(
            context(sent),
            Duration.ofSeconds(2),
            () -> {
              verified.incrementAndGet();
              self.get().retireAllBut(held.get());
            })) {
      self.set(lease);
      lease.attach(a);
      lease.attach(b);
      sent.set(System.nanoTime());
      while (!lease.valid()) {
        Thread.sleep(5);
      }
      assertEquals(1, verified.get(), "granted after one verify");
      assertEquals(ErrorCode.OK, read(ma));
      assertTrue(word(ma) != 0 && word(ma) == word(mb), "the expiry in both words");

      // No acknowledgement any more (a paused server, as the master sees it): the lease lapses.
      while (lease.valid()) {
        Thread.sleep(5);
      }
      FerriteException e = assertThrows(FerriteException.class, lease::check);
      assertEquals(ErrorCode.UNAVAILABLE, e.code());
      assertTrue(e.getMessage().contains(MappedRegion.LEASE_LAPSED), e.getMessage());
      assertEquals(ErrorCode.UNAVAILABLE, read(ma));
      assertEquals(ErrorCode.UNAVAILABLE, read(mb));
      assertTrue(System.nanoTime() - word(mb) >= 0, "a lapsed lease's word is in the past");

      // Meanwhile the master promoted A's backup; the server resumes and a heartbeat is acked.
      held.set(List.of(b));
      sent.set(System.nanoTime());
      while (!lease.valid()) {
        Thread.sleep(5);
      }
      assertEquals(2, verified.get(), "checked with the master before serving again");
      assertEquals(ErrorCode.OK, read(mb));
      assertEquals(ErrorCode.UNAVAILABLE, read(ma), "a deposed region's one-sided ops");
      assertFalse(lease.serves(a));
      assertEquals(0, word(ma), "a retired region's word");
      long renewedB = word(mb);
      sent.set(System.nanoTime());
      while (word(mb) == renewedB) {
        Thread.sleep(5);
      }
      assertEquals(0, word(ma), "a retired region's word was written again");
      assertEquals(ErrorCode.UNAVAILABLE, read(ma));
    } finally {
      ma.closeAndDelete();
      mb.closeAndDelete();
    }
  }
}
