package io.ferrite.kv.server;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.server.ServerLease;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.kv.ShardLayout;
import java.time.Duration;

/**
 * A kv server's lease from the master (docs/KV.md "Leases"): the kernel's {@link ServerLease},
 * whose published word is a replicated shard's table-region header word ({@link
 * ShardLayout#LEASE_OFFSET}). Replicated shards, their RPCs and the one-sided ops on their regions,
 * are served only while it is valid; {@code verify} (KvService) retires the copies the directory no
 * longer lists before it is granted again after a lapse.
 */
final class KvLease extends ServerLease {
  KvLease(ServiceContext ctx, Duration period, Runnable verify) {
    super(ctx, "kv", period, verify);
  }

  /**
   * Starts publishing the lease in table region {@code r} of a replicated shard (made by the shard;
   * not reachable by clients yet), at {@link ShardLayout#LEASE_OFFSET}.
   */
  void publish(MappedRegion r) {
    publish(r, ShardLayout.LEASE_OFFSET);
  }
}
