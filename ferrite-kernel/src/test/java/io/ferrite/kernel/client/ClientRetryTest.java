package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client retries only what is safe to repeat. Faults come from the local fabric (dropped
 * requests and lost responses); heartbeats and renewals are slowed down so that no background call
 * takes a fault meant for the op under test.
 */
@ExtendWith(SeedExtension.class)
class ClientRetryTest {
  @TempDir Path dir;
  LocalCluster cluster;
  FerriteClient client;
  BlockRef block;

  @BeforeEach
  void start() throws Exception {
    cluster =
        new LocalCluster(
            dir,
            Map.of(
                FerriteConfig.HEARTBEAT_INTERVAL, "20s",
                FerriteConfig.DEAD_TIMEOUT, "60s",
                FerriteConfig.SESSION_LEASE, "120s"));
    cluster.startMaster();
    cluster.startServer("s1");
    client = cluster.client();
    block = client.allocate(1).get(0);
    client.readSync(block, 0, ByteBuffer.allocate(8)); // connect before faults start
  }

  @AfterEach
  void stop() throws Exception {
    cluster.network.faults().heal();
    cluster.close();
  }

  @Test
  void readsAreRetriedAfterDroppedRequests(Random random) {
    byte[] data = new byte[256];
    random.nextBytes(data);
    client.writeSync(block, 0, ByteBuffer.wrap(data));
    cluster.network.faults().dropNextRequests(2);
    ByteBuffer back = ByteBuffer.allocate(data.length);
    client.readSync(block, 0, back); // attempts 1 and 2 dropped, 3 succeeds
    assertArrayEquals(data, back.array());
  }

  @Test
  void readsGiveUpAfterTheBound() {
    cluster.network.faults().dropNextRequests(3);
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> client.readSync(block, 0, ByteBuffer.allocate(8)));
    assertEquals(ErrorCode.DROPPED, e.code());
    assertTrue(e.retryable(), "the caller may still retry");
  }

  @Test
  void verifiedReadsRejectTornCopiesAndRetry(Random random) throws Exception {
    byte[] a = new byte[4096];
    byte[] b = new byte[4096];
    byte[] c = new byte[4096];
    random.nextBytes(a);
    random.nextBytes(b);
    random.nextBytes(c);
    long checksumA = Checksum64.of(a);
    client.writeSync(block, 0, ByteBuffer.wrap(a));
    // Every read now copies half, waits for a write to land, then copies the rest; a writer
    // alternating B and C therefore tears every read while it runs, and writes A only once it
    // stopped: no attempt before that can be an untorn A (with A among the alternation, two
    // writes landing during one wait, B then A, made the first attempt an untorn A on a loaded
    // machine: seen in .ci/run).
    cluster.network.faults().tearWait(Duration.ofMillis(100));
    cluster.network.faults().tearReads(true);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong writes = new AtomicLong();
    try (TestThreads bg = new TestThreads(() -> stop.set(true))) {
      bg.start(
          "torn-read-writer",
          () -> {
            while (!stop.get()) {
              client.writeSync(block, 0, ByteBuffer.wrap(writes.get() % 2 == 0 ? b : c));
              writes.incrementAndGet();
              LockSupport.parkNanos(500_000);
            }
            client.writeSync(block, 0, ByteBuffer.wrap(a));
          });
      try {
        while (writes.get() == 0 && !bg.failed()) {
          Thread.onSpinWait();
        }
        long readsBefore = serverReads();
        ByteBuffer dst = ByteBuffer.allocate(a.length);
        CompletableFuture<Void> read = client.readVerified(block, 0, dst, checksumA);
        Thread.sleep(150); // let the writer tear a few attempts
        stop.set(true);
        bg.join();
        Futures.join(read);
        assertArrayEquals(a, dst.array(), "only an untorn copy of A is accepted");
        // The first attempt copied B or C (torn or not), which is not A: rejected and retried, so
        // two reads at least.
        long reads = serverReads() - readsBefore;
        assertTrue(reads >= 2, "reads: " + reads + " (a torn attempt and the untorn one)");
      } finally {
        stop.set(true);
      }
    }

    // Data that never matches fails with a retryable CONFLICT, not a wrong answer.
    cluster.network.faults().tearReads(false);
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                Futures.join(
                    client.readVerified(block, 0, ByteBuffer.allocate(a.length), checksumA + 1)));
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.retryable());
  }

  private long serverReads() {
    return cluster.servers.get(0).endpoints().get(0).counters().ops(OpKind.READ);
  }

  @Test
  void atomicsAreNotRetriedWhenTheAnswerIsLost() {
    assertEquals(0, client.fetchAndAddSync(block, 0, 0));
    cluster.network.faults().dropNextResponses(1);
    FerriteException e =
        assertThrows(FerriteException.class, () -> client.fetchAndAddSync(block, 0, 1));
    assertEquals(ErrorCode.DROPPED, e.code());
    // The add happened once: a blind retry would have made it twice.
    assertEquals(1, client.fetchAndAddSync(block, 0, 0));
  }

  @Test
  void writesAreNotRetried() {
    cluster.network.faults().dropNextRequests(1);
    assertEquals(
        ErrorCode.DROPPED,
        assertThrows(
                FerriteException.class,
                () -> client.writeSync(block, 0, ByteBuffer.wrap(new byte[] {1})))
            .code());
    // Allocations are retried, carrying a request id: RideThroughTest shows they happen once.
  }
}
