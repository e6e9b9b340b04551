package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The reader's half of the shm lease (docs/KV.md "Leases"): after a one-sided read of a replicated
 * shard from its own mapping, a client refuses what it read unless the shard's lease word holds a
 * deadline still ahead, and refuses it the way a tcp reader is refused by a server whose lease
 * lapsed (so {@link KvTable} fails over). The server's half (the word written, renewed, withdrawn)
 * is {@code KvLeaseTest}'s; both together, across processes, {@code KvShmFenceMultiProcessTest}.
 */
class MappedLeaseCheckTest {
  private static final RegionRef ENTRIES = new RegionRef(4, 9, 0x5EED, 4096);
  private static final ShardLayout LAYOUT = new ShardLayout(1, 0, 1, 64, ENTRIES, List.of());

  /** A connection whose mapping of {@link #ENTRIES} holds {@code word} at the lease offset. */
  private static FabricConnection mapping(AtomicLong word) {
    return (FabricConnection)
        Proxy.newProxyInstance(
            FabricConnection.class.getClassLoader(),
            new Class<?>[] {FabricConnection.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "mapsRegions" -> true;
                  case "remoteId" -> 4;
                  case "mappedLongAcquire" -> {
                    assertEquals(ENTRIES, args[0]);
                    assertEquals((long) ShardLayout.LEASE_OFFSET, args[1]);
                    yield word.get();
                  }
                  default -> throw new UnsupportedOperationException(method.getName());
                });
  }

  @Test
  void aDeadlineAheadPassesAndAnyOtherWordRefusesAsALapsedLease() {
    AtomicLong word = new AtomicLong(System.nanoTime() + Duration.ofMinutes(10).toNanos());
    FabricConnection c = mapping(word);
    KvTable.checkMappedLease(c, LAYOUT); // held: the read stands

    for (long w :
        new long[] {0, System.nanoTime() - 1, System.nanoTime() - Duration.ofHours(1).toNanos()}) {
      word.set(w);
      FerriteException e =
          assertThrows(FerriteException.class, () -> KvTable.checkMappedLease(c, LAYOUT), "" + w);
      assertEquals(ErrorCode.UNAVAILABLE, e.code());
      assertTrue(KvTable.leaseLapsed(e), e.getMessage());
      assertTrue(e.retryable(), "a lapsed lease is worth a retry (a failover): " + e);
    }
  }
}
