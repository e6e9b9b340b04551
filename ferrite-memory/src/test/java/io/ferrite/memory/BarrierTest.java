package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** RStore §V-A: a coordinator and workers (each its own client) take turns through byte flags. */
class BarrierTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  static final int WORKERS = 3;

  @TempDir Path dir;
  MemoryCluster cluster;
  ExecutorService pool;

  @BeforeEach
  void start() throws Exception {
    cluster = new MemoryCluster(dir, 2);
    pool = Executors.newFixedThreadPool(WORKERS, new NamedThreadFactory("barrier-worker", true));
  }

  @AfterEach
  void stop() throws Exception {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    cluster.close();
  }

  /** Layout: barrier bytes at 0, then per worker 8 B of input and 8 B of output from 64. */
  static long in(int w) {
    return 64 + 16L * w;
  }

  static long out(int w) {
    return in(w) + 8;
  }

  @Test
  void phasesRunInLockstepAndWorkersSeeTheirAssignments() throws Exception {
    RStore coordinatorStore = cluster.store();
    Namespace ns = coordinatorStore.createNamespace("coord");
    ns.reserve(MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(4096, 0);
    Mapping cm = ra.map(MemoryFlags.MAP_NO_BUFFER);
    Barrier coordinator = new Barrier(cm, 0, WORKERS);
    coordinator.reset();
    int phases = 6;
    List<Future<Integer>> workers = new ArrayList<>();
    for (int w = 0; w < WORKERS; w++) {
      int me = w;
      RStore s = cluster.store();
      long address = ra.address();
      workers.add(
          pool.submit(
              () -> {
                Mapping m =
                    s.joinNamespace("coord").raddress(address, 4096).map(MemoryFlags.MAP_NO_BUFFER);
                Barrier b = new Barrier(m, 0, WORKERS);
                ByteBuffer word = ByteBuffer.allocateDirect(8);
                int done = 0;
                for (int p = 1; p <= phases; p++) {
                  b.awaitStart(me, p, WAIT);
                  m.readSync(in(me), word.clear());
                  long task = word.getLong(0);
                  m.writeSync(out(me), word.clear().putLong(0, task * task));
                  b.finish(me, p);
                  done++;
                }
                m.unmap();
                return done;
              }));
    }
    ByteBuffer word = ByteBuffer.allocateDirect(8);
    for (int p = 1; p <= phases; p++) {
      for (int w = 0; w < WORKERS; w++) {
        cm.writeSync(in(w), word.clear().putLong(0, p * 100L + w));
      }
      coordinator.start(p);
      coordinator.awaitFinished(p, WAIT);
      for (int w = 0; w < WORKERS; w++) {
        cm.readSync(out(w), word.clear());
        long task = p * 100L + w;
        assertEquals(task * task, word.getLong(0), "phase " + p + " worker " + w);
      }
    }
    for (Future<Integer> f : workers) {
      assertEquals(phases, f.get(30, TimeUnit.SECONDS));
    }
    cm.unmap();
  }

  @Test
  void failuresTimeoutsAndBadArgumentsAreReported() {
    RStore store = cluster.store();
    Namespace ns = store.createNamespace("fail");
    ns.reserve(MemoryCluster.BLOCK);
    Mapping m = ns.alloc(16, 0).map(0);
    Barrier b = new Barrier(m, 0, 2);
    b.reset();
    b.start(1);
    b.awaitStart(0, 1, WAIT);
    b.finish(0, 1);
    FerriteException e =
        assertThrows(FerriteException.class, () -> b.awaitFinished(1, Duration.ofMillis(50)));
    assertEquals(ErrorCode.TIMEOUT, e.code());
    assertTrue(e.getMessage().contains("worker(s) 1 not finished"), e.getMessage());
    b.fail(1);
    e = assertThrows(FerriteException.class, () -> b.awaitFinished(1, WAIT));
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.getMessage().contains("worker(s) 1 failed"), e.getMessage());
    e = assertThrows(FerriteException.class, () -> b.awaitStart(0, 2, Duration.ofMillis(20)));
    assertEquals(ErrorCode.TIMEOUT, e.code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT, assertThrows(FerriteException.class, () -> b.start(0)).code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> b.finish(2, 1)).code());
    assertEquals(
        ErrorCode.OUT_OF_BOUNDS,
        assertThrows(FerriteException.class, () -> new Barrier(m, 0, 16)).code());
    assertEquals(1, Barrier.next(Barrier.MAX_PHASE));
    m.unmap();
  }
}
