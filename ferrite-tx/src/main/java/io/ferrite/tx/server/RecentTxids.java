package io.ferrite.tx.server;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Maps keyed by txid that remember the most recent transactions only: in insertion order, the
 * eldest entry forgotten once there are more than a bound (docs/TX.md, "A coordinator that dies
 * after LOCK": a participant remembers its last 65 536 decided transactions). Not thread-safe.
 */
final class RecentTxids {
  /** How many decided transactions a server, a log or a mirror remembers. */
  static final int DECIDED = 1 << 16;

  private RecentTxids() {}

  /** An empty map that keeps at most {@code max} entries, forgetting the eldest. */
  static <V> Map<Long, V> map(int max) {
    return new LinkedHashMap<>() {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, V> eldest) {
        return size() > max;
      }
    };
  }
}
