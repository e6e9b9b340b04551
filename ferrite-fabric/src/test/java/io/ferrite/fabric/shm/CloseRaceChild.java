package io.ferrite.fabric.shm;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * A process for {@link ShmCloseRaceTest}: serves one region over shm and, round after round, reads
 * it from {@value #THREADS} threads through one connection while the main thread closes that
 * connection under them. An op racing the close must complete (on mapped memory) or fail with a
 * {@link FerriteException}; memory unmapped under a copy kills this JVM (SIGSEGV), anything else
 * thrown exits 2. Prints {@code OK} and what the ops did, and exits 0, when every round passed.
 *
 * <p>Arguments: the directory for the region and the socket, the number of rounds, the seed.
 */
public final class CloseRaceChild {
  static final int THREADS = 8;

  /** Large copies: the longer a copy runs, the likelier a close lands in the middle of one. */
  static final int READ_BYTES = 1 << 20;

  static final int REGION_BYTES = 8 << 20;

  private CloseRaceChild() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int rounds = Integer.parseInt(args[1]);
    Random random = new Random(Long.parseLong(args[2]));
    Credentials creds =
        new Credentials(
            "close-race", "close-race-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    RegionTable regions = new RegionTable();
    MappedRegion region =
        MappedRegion.create(dir.resolve("region-1"), 1, REGION_BYTES, random.nextLong());
    regions.register(region);
    for (long at = 0; at < REGION_BYTES; at += 4096) {
      region.putLongRelease(at, at); // commit the pages: a copy of a hole would be cheap
    }
    ShmFabric fabric = new ShmFabric();
    FabricServer server =
        fabric.serve(ServerSpec.loopback(5, creds, regions, RpcHandler.none(), dir));
    RegionRef ref = regions.ref(5, 1);
    long completed = 0;
    Map<ErrorCode, Long> failed = new EnumMap<>(ErrorCode.class);
    try {
      for (int round = 0; round < rounds; round++) {
        FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(creds));
        c.readSync(ref, 0, ByteBuffer.allocate(8)); // maps the region
        CountDownLatch started = new CountDownLatch(THREADS);
        AtomicLong ok = new AtomicLong();
        AtomicReference<Throwable> wrong = new AtomicReference<>();
        Map<ErrorCode, AtomicLong> codes = new java.util.concurrent.ConcurrentHashMap<>();
        Thread[] readers = new Thread[THREADS];
        for (int t = 0; t < THREADS; t++) {
          long seed = random.nextLong();
          readers[t] =
              new Thread(
                  () -> {
                    Random r = new Random(seed);
                    ByteBuffer dst = ByteBuffer.allocateDirect(READ_BYTES);
                    boolean first = true;
                    try {
                      while (true) {
                        dst.clear();
                        long at = 8L * r.nextInt((REGION_BYTES - READ_BYTES) / 8);
                        try {
                          Futures.join(c.read(ref, at, dst));
                          ok.incrementAndGet();
                        } catch (FerriteException e) {
                          codes.computeIfAbsent(e.code(), k -> new AtomicLong()).incrementAndGet();
                          return; // the connection is closed: every later op fails the same way
                        } finally {
                          if (first) {
                            first = false;
                            started.countDown();
                          }
                        }
                      }
                    } catch (Throwable e) {
                      wrong.compareAndSet(null, e);
                    }
                  },
                  "close-race-reader-" + t);
          readers[t].start();
        }
        started.await();
        LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(random.nextInt(2000)));
        c.close();
        for (Thread t : readers) {
          t.join();
        }
        if (wrong.get() != null) {
          System.out.println("round " + round + ": an op threw " + wrong.get());
          for (StackTraceElement e : wrong.get().getStackTrace()) {
            System.out.println("  at " + e);
          }
          System.exit(2);
        }
        completed += ok.get();
        long endings = 0;
        for (Map.Entry<ErrorCode, AtomicLong> e : codes.entrySet()) {
          failed.merge(e.getKey(), e.getValue().get(), Long::sum);
          endings += e.getValue().get();
        }
        if (endings != THREADS) {
          System.out.println("round " + round + ": " + endings + " readers saw the close end");
          System.exit(2);
        }
      }
    } finally {
      server.close();
      fabric.close();
      region.close();
    }
    System.out.println(
        "OK " + rounds + " rounds, " + completed + " reads completed, failed " + failed);
  }
}
