package io.ferrite.kv.server;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.server.ServiceContext;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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
    return (ServiceContext)
        Proxy.newProxyInstance(
            ServiceContext.class.getClassLoader(),
            new Class<?>[] {ServiceContext.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "masterAckSentNanos" -> OptionalLong.of(ackSentNanos);
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
}
