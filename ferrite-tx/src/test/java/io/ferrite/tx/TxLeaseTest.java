package io.ferrite.tx;

import static io.ferrite.tx.TxCommitTest.num;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A tx primary declared DEAD while alive never serves (docs/TX.md "Leases"): three servers, {@code
 * tx.replicas} 2. The primary of an object's region is <em>paused</em> as the master sees it (its
 * heartbeats stop; its endpoints, service and memory go on, as a SIGSTOPped process's would once it
 * resumes), the master declares it DEAD and promotes its backup, a fresh client commits a new value
 * there. A client whose map still names the old primary must then read only the new value (its
 * one-sided reads of the old primary are refused: by the server over the local fabric, by the lease
 * word over shm), must commit at the promoted copy, and the old primary refuses every region RPC
 * (here a COMMIT_LOCAL at the version it still holds, which it would otherwise apply) with "lease
 * lapsed". Nothing is timed: waits are bounded polls.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120) // a hang guard only
class TxLeaseTest {
  @TempDir Path dir;
  @AutoClose TxCluster cluster;

  /**
   * Stops {@code s}'s heartbeats without a goodbye: to the master it is a paused server (declared
   * DEAD after {@code server.dead.timeout}), while everything else of it keeps running. The kernel
   * has no public hook for this (a clean close says goodbye and closes the endpoints), so the test
   * reaches the server's master link.
   */
  static void silenceMasterLink(MemoryServer s) throws ReflectiveOperationException {
    Field f = MemoryServer.class.getDeclaredField("link");
    f.setAccessible(true);
    Object link = f.get(s);
    Method stop = link.getClass().getDeclaredMethod("stopHeartbeats");
    stop.setAccessible(true);
    stop.invoke(link);
  }

  int primaryAtMaster(int region) {
    Wire.Reader r =
        new Wire.Reader(
            cluster
                .client()
                .callMasterSync(
                    TxProtocol.MASTER_SERVICE,
                    TxProtocol.GET_REGION,
                    new Wire.Writer().i32(region).toBuffer()),
            "placement");
    r.i32("region");
    return r.i32("primary");
  }

  @ParameterizedTest(name = "shm={0}")
  @ValueSource(booleans = {false, true})
  void aPausedPrimaryThatWasDeposedNeverServesAClientWithTheOldMap(boolean real, Random random)
      throws Exception {
    cluster = new TxCluster(dir, 3, real, 2);
    TxClient old = new TxClient(cluster.client());
    long v1 = random.nextLong() | 1;
    FatPointer p = TxCommitTest.make(old, num(v1));
    assertEquals(v1, num(old.lockFreeRead(p)));
    TxClient.RegionView stale = old.view(p.region());
    int x = stale.primary();
    long v1Version = old.read(p).version();
    FabricConnection toX = old.ferrite().connection(x);
    assertEquals(real, toX.mapsRegions());

    MemoryServer paused =
        cluster.servers.stream().filter(m -> m.serverId() == x).findFirst().orElseThrow();
    silenceMasterLink(paused);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (primaryAtMaster(p.region()) == x) {
      assertTrue(System.nanoTime() < deadline, "the master never promoted x's backup");
      Thread.sleep(20);
    }
    int y = primaryAtMaster(p.region());
    assertNotEquals(x, y);

    // A fresh client commits v2 at the promoted copy.
    TxClient fresh = new TxClient(cluster.client());
    long v2 = v1 + 2;
    Transaction t = fresh.txBegin();
    assertEquals(v1, num(t.txRead(p)));
    t.txWrite(p, num(v2));
    assertTrue(t.txCommit().committed());
    assertEquals(y, fresh.view(p.region()).primary());

    // The client with the old map: its map names x; it reads v2 (never v1), at y.
    assertEquals(x, old.view(p.region()).primary());
    assertEquals(v2, num(old.lockFreeRead(p)));
    assertEquals(y, old.view(p.region()).primary());

    // The old primary still holds v1 in its memory, but serves none of it.
    FerriteException refused =
        assertThrows(FerriteException.class, () -> rawRead(toX, stale, p, real));
    assertEquals(ErrorCode.UNAVAILABLE, refused.code(), refused.getMessage());
    assertTrue(refused.getMessage().contains(MappedRegion.LEASE_LAPSED), refused.getMessage());
    FerriteException commit =
        assertThrows(FerriteException.class, () -> commitLocalAt(old, x, p, v1Version, v1 + 4));
    assertEquals(ErrorCode.UNAVAILABLE, commit.code(), commit.getMessage());
    assertTrue(commit.getMessage().contains(MappedRegion.LEASE_LAPSED), commit.getMessage());

    // Again with the old map planted, through a transaction: it reads v2 and commits at y.
    old.cache(stale);
    long v3 = v2 + 2;
    Transaction u = old.txBegin();
    assertEquals(v2, num(u.txRead(p)));
    u.txWrite(p, num(v3));
    assertTrue(u.txCommit().committed());
    assertEquals(v3, num(fresh.lockFreeRead(p)));
    assertEquals(v3, num(new TxClient(cluster.client()).lockFreeRead(p)));
  }

  /** One one-sided read of {@code p} through the stale view, with the shm lease word check. */
  static long rawRead(FabricConnection c, TxClient.RegionView v, FatPointer p, boolean shm) {
    ByteBuffer dst = ByteBuffer.allocate(ObjectLayout.lines(p.size()) * ObjectLayout.LINE);
    c.readSync(v.ref(), p.offset(), dst);
    if (shm) {
      TxLeaseWord.check(c, v.ref());
    }
    return ObjectLayout.verify(dst.clear(), ObjectLayout.lines(p.size()), p.incarnation());
  }

  /**
   * A single-server commit of {@code value} into {@code p} at {@code expected}, sent to {@code
   * server}.
   */
  static void commitLocalAt(TxClient c, int server, FatPointer p, long expected, long value) {
    Wire.Writer w = new Wire.Writer().i64(42).i32(1);
    FatPointer.writeTo(w, p);
    w.i64(expected).u8(TxProtocol.KIND_WRITE).bytes(num(value));
    w.i32(0);
    c.ferrite().callSync(server, TxProtocol.SERVER_SERVICE, TxProtocol.COMMIT_LOCAL, w.toBuffer());
  }
}
