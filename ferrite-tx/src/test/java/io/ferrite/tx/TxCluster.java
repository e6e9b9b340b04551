package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.local.LocalFaults;
import io.ferrite.fabric.netty.NettyServer;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.tx.server.TxLogsTesting;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link ClusterHarness} with {@code serverCount} memory servers; the tx service and directory
 * are found by {@link java.util.ServiceLoader}. Regions are small (256 KiB of 4 KiB slabs, objects
 * up to 1000 bytes) so a test fills one quickly; the lock lease is short (300 ms) so a test of a
 * dead coordinator sees its locks resolved; {@code tx.replicas} as the test asks (1 by default).
 * The constructor returns when every server it started is ALIVE at the master.
 */
final class TxCluster extends ClusterHarness {
  static final Credentials CREDENTIALS =
      new Credentials(
          "tx-test", "0123456789abcdef-tx-test-secret".getBytes(StandardCharsets.UTF_8));

  /** With {@code tx.replicas} 1: every region has its primary only. */
  TxCluster(Path dataDir, int serverCount, boolean real) throws IOException, InterruptedException {
    this(dataDir, serverCount, real, 1);
  }

  TxCluster(Path dataDir, int serverCount, boolean real, int replicas)
      throws IOException, InterruptedException {
    super(dataDir, CREDENTIALS, real, config(replicas));
    startOrClose(
        () -> {
          startMaster();
          for (int i = 0; i < serverCount; i++) {
            startServer("tx" + i);
          }
        });
    awaitServers(serverCount);
  }

  /**
   * {x, y} on two servers: x made by {@code a} in its own region ({@link TxCommitTest#make}), y by
   * {@code b} in a new region whose primary is another server ({@link TxClient#newRegionNear}, an
   * allocation hint into it). x's region is made first, so it has the lower id: the decider region.
   * On a loaded machine a server may be declared DEAD for a moment (its heartbeats late), and a
   * region placed then goes to a live one, maybe x's server: y's region is made again, a bounded
   * number of times, until its primary is another server.
   */
  FatPointer[] twoServers(TxClient a, byte[] x, TxClient b, byte[] y) throws InterruptedException {
    FatPointer px = TxCommitTest.make(a, x);
    int first = a.view(px.region()).primary();
    int other =
        servers.stream()
            .mapToInt(MemoryServer::serverId)
            .filter(id -> id != first)
            .findFirst()
            .orElseThrow(() -> new AssertionError("one server only: " + servers));
    for (int attempt = 1; ; attempt++) {
      awaitServers(2);
      TxPlacement r = b.newRegionNear(other);
      if (r.primary() != first) {
        assertTrue(r.region() > px.region(), "regions numbered in creation order: " + r);
        Transaction t = b.txBegin();
        FatPointer py = t.txAlloc(y.length, new FatPointer(r.region(), 0, 1, 0));
        t.txWrite(py, y);
        assertTrue(t.txCommit().committed(), "the setup of " + py);
        return new FatPointer[] {px, py};
      }
      if (attempt == 10) {
        throw new AssertionError(
            "10 regions asked near server " + other + " were all placed on " + first);
      }
    }
  }

  /** The running server whose id is {@code id}. */
  MemoryServer server(int id) {
    return servers.stream().filter(m -> m.serverId() == id).findFirst().orElseThrow();
  }

  /**
   * Stops server {@code id} as a SIGKILL would leave its logs (what was queued to the appenders is
   * dropped, {@link TxLogsTesting#crashOnClose}); its name, to start it again on its directory.
   */
  String crash(int id) {
    MemoryServer victim = server(id);
    servers.remove(victim);
    TxLogsTesting.crashOnClose(true);
    try {
      victim.close();
    } finally {
      TxLogsTesting.crashOnClose(false);
    }
    return victim.name();
  }

  /**
   * A lock-free read of {@code p}'s number ({@link TxCommitTest#num}) that waits out a lock (BUSY,
   * which a lock-free read answers after its own bounded wait) up to 30 times.
   */
  static long readWhenClear(TxClient c, FatPointer p) {
    for (int i = 0; ; i++) {
      try {
        return TxCommitTest.num(c.lockFreeRead(p));
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.BUSY || i >= 30) {
          throw e;
        }
      }
    }
  }

  static Map<String, String> config(int replicas) {
    Map<String, String> c = new HashMap<>();
    c.put(TxConfig.REPLICAS, Integer.toString(replicas));
    c.put(FerriteConfig.CAPACITY_DRAM, "8m");
    c.put(FerriteConfig.CAPACITY_DISK, "0");
    c.put(TxConfig.REGION_SIZE, "256k");
    c.put(TxConfig.SLAB_SIZE, "4k");
    c.put(TxConfig.OBJECT_MAX, "1000");
    c.put(TxConfig.LOCK_LEASE, "300ms");
    return c;
  }

  /**
   * Server {@code server}'s copy of {@code p} (a backup's, through OPEN_COPY's read capability):
   * its version and payload, verified (the test fails on a torn or locked copy).
   */
  static TxClient.Copy backupCopy(ClusterHarness cluster, int server, FatPointer p) {
    Wire.Reader r =
        new Wire.Reader(
            cluster
                .client()
                .callSync(
                    server,
                    TxProtocol.SERVER_SERVICE,
                    TxProtocol.OPEN_COPY,
                    new Wire.Writer().i32(p.region()).toBuffer()),
            "copy");
    RegionRef ref = new RegionRef(server, r.i32("fabricRegion"), r.i64("readKey"), r.i64("length"));
    int lines = ObjectLayout.lines(p.size());
    ByteBuffer copy = ByteBuffer.allocate(lines * ObjectLayout.LINE);
    cluster.client().connection(server).readSync(ref, p.offset(), copy);
    long v = ObjectLayout.verify(copy.clear(), lines, p.incarnation());
    assertTrue(v >= 0, "copy of " + p + " at server " + server + ": " + v);
    return new TxClient.Copy(v, ObjectLayout.payload(copy, p.size()));
  }

  /**
   * {@code n} clients whose region maps already hold the region of every one of {@code objects}: a
   * test that drops messages is not about a dropped GET_REGION, which would only abort.
   */
  List<TxClient> clientsViewing(int n, List<FatPointer> objects) {
    List<TxClient> clients = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      TxClient c = new TxClient(client());
      // Through the failover path: on a loaded machine a server may refuse OPEN_REGION while its
      // lease is renewed late ("lease lapsed", retryable), which a bare view() would throw.
      objects.forEach(p -> c.onPrimary(p.region(), v -> v));
      clients.add(c);
    }
    return clients;
  }

  /**
   * The local fabric's faults, tearing every one-sided read (a torn copy held 1 ms) unless the
   * cluster is {@code real} (then the clients read shm regions, torn as they happen).
   */
  LocalFaults faults(boolean real) {
    LocalFaults faults = network.faults();
    if (!real) {
      faults.tearWait(Duration.ofMillis(1));
      faults.tearReads(true);
    }
    return faults;
  }

  /**
   * Calls the servers' endpoints answered on the receiving thread (no dispatch-thread hand-off).
   */
  long inlineCalls() {
    long n = 0;
    for (MemoryServer s : servers) {
      for (FabricServer e : s.endpoints()) {
        if (e instanceof NettyServer ns) {
          n += ns.dispatcher().inlineCalls();
        }
      }
    }
    return n;
  }
}
