package io.ferrite.kernel.master;

import io.ferrite.kernel.master.MasterEvent.BlockKey;
import java.util.LinkedHashSet;
import java.util.Set;

/** The master's record of one client session. Guarded by the {@link MasterState} lock. */
final class SessionEntry {
  final long id;
  final String client;
  final int leaseMillis;
  long lastRenew;
  final Set<BlockKey> blocks = new LinkedHashSet<>();

  SessionEntry(long id, String client, int leaseMillis, long now) {
    this.id = id;
    this.client = client;
    this.leaseMillis = leaseMillis;
    this.lastRenew = now;
  }
}
