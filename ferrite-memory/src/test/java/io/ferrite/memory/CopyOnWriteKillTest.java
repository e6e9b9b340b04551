package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.memory.master.MemoryMaster;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * RStore §III-G: a copy-on-write writer is SIGKILLed in the middle of its writes while readers
 * read; every read returns one whole generation (all bytes equal), and the dead writer's lease is
 * collected so that another writer can publish.
 */
@Tag("multiprocess")
@ExtendWith({SeedExtension.class, NettyLeakExtension.class})
class CopyOnWriteKillTest {
  static final int CHUNK = 64 << 10;
  static final int LENGTH = 2 << 20;

  @TempDir Path dir;
  MemoryCluster cluster;
  Process writer;
  ExecutorService readers;

  @AfterEach
  void stop() throws Exception {
    if (writer != null) {
      writer.destroyForcibly().waitFor();
    }
    if (readers != null) {
      readers.shutdownNow();
      readers.awaitTermination(10, TimeUnit.SECONDS);
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void readsSeeWholeGenerationsAcrossAWriterKilledMidWrite(Random random) throws Exception {
    cluster = new MemoryCluster(dir.resolve("cluster"), 3, true, new MemoryMaster(8192, 1000));
    RStore owner = new RStore(cluster.client("tcp"));
    Namespace ns = owner.createNamespace("killed", CHUNK);
    ns.reserve(11L << 20);
    RAddress ra = ns.alloc(LENGTH, MemoryFlags.ALLOC_COW);
    long freeIdle = ns.stat().freeBytes();

    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong reads = new AtomicLong();
    Set<Integer> seen = ConcurrentHashMap.newKeySet();
    readers = Executors.newFixedThreadPool(2, new NamedThreadFactory("cow-reader", true));
    List<Future<String>> results = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      RStore reader = new RStore(cluster.client("tcp"));
      Namespace rns = reader.joinNamespace("killed");
      results.add(
          readers.submit(
              () -> {
                ByteBuffer b = ByteBuffer.allocateDirect(LENGTH);
                while (!stop.get()) {
                  try (Mapping m =
                      rns.raddress(ra.address(), LENGTH).map(MemoryFlags.MAP_NO_BUFFER)) {
                    m.readSync(0, b);
                    for (int k = 0; k < 2; k++) { // read twice per mapping: same generation
                      int v = b.get(0);
                      for (int i = 0; i < LENGTH; i++) {
                        if (b.get(i) != v) {
                          return "torn read: byte " + i + " is " + b.get(i) + ", byte 0 is " + v;
                        }
                      }
                      seen.add(v);
                      reads.incrementAndGet();
                      m.readSync(0, b);
                    }
                  }
                }
                return null;
              }));
    }

    // Let a writer publish a few generations, then SIGKILL it at a random moment; until the
    // kill lands in the middle of a write (a lease pending at the master), up to 5 writers.
    boolean midWrite = false;
    long lastPublished = 0;
    for (int attempt = 0; attempt < 5 && !midWrite; attempt++) {
      Path log = dir.resolve("writer-" + attempt + ".log");
      writer = startWriter(log, ra);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (published(log) < 2 && System.nanoTime() < deadline && writer.isAlive()) {
        Thread.sleep(10);
      }
      assertTrue(published(log) >= 2, "the writer published: " + Files.readString(log));
      Thread.sleep(random.nextInt(30));
      writer.destroyForcibly().waitFor(); // SIGKILL
      midWrite = ns.stat().pendingWrites() == 1; // its lease lasts 1 s after the kill
      lastPublished = published(log);
    }
    assertTrue(midWrite, "no kill of 5 landed between a lease and its publish");

    // Its lease expires (1 s) and its session (2 s): another writer can publish then.
    Mapping next = owner.joinNamespace("killed").raddress(ra.address(), LENGTH).map(0);
    ByteBuffer full = ByteBuffer.allocateDirect(LENGTH);
    for (int i = 0; i < LENGTH; i++) {
      full.put(i, (byte) 121);
    }
    long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (true) {
      try {
        next.writeSync(0, full);
        break;
      } catch (io.ferrite.fabric.FerriteException e) {
        if (System.nanoTime() > until) {
          throw e;
        }
        Thread.sleep(50);
      }
    }
    long reached = reads.get();
    while (!seen.contains(121) && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    while (reads.get() < reached + 4 && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    stop.set(true);
    for (Future<String> f : results) {
      String failure = f.get(30, TimeUnit.SECONDS);
      assertEquals(null, failure);
    }
    assertTrue(seen.contains(121), "readers saw the new writer's data: " + seen);
    assertTrue(seen.size() >= 2, "readers saw several generations: " + seen);
    next.unmap();

    // Nothing leaks: once the dead writer's session is gone, only the allocation's chunks are used.
    long free = 0;
    while (System.nanoTime() < until) {
      NamespaceStat st = ns.stat();
      free = st.freeBytes();
      if (st.mappings() == 0 && free == freeIdle) {
        break;
      }
      Thread.sleep(50);
    }
    assertEquals(freeIdle, free, "after " + lastPublished + " generations by the killed writer");
  }

  private Process startWriter(Path log, RAddress ra) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"));
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(CowWriterProcess.class.getName());
    cmd.add(cluster.masterAddress());
    cmd.add(MemoryCluster.CREDENTIALS.clusterId());
    cmd.add(HexFormat.of().formatHex(MemoryCluster.CREDENTIALS.secret()));
    cmd.add("killed");
    cmd.add(Long.toString(ra.address()));
    cmd.add(Integer.toString(LENGTH));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  private static long published(Path log) throws Exception {
    if (!Files.exists(log)) {
      return 0;
    }
    return Files.readAllLines(log, StandardCharsets.UTF_8).stream()
        .filter(l -> l.startsWith("published "))
        .count();
  }
}
