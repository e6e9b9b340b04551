package io.ferrite.kernel.proto;

/** A memory server's membership state as the master sees it. Wire value = ordinal. */
public enum ServerState {
  /** Heartbeats arrive within the dead-server timeout; its blocks are handed out. */
  ALIVE,
  /** Missed heartbeats for the timeout; its blocks are not handed out until it re-registers. */
  DEAD,
  /** Known from the journal of a restarted master, not yet heard from; blocks not handed out. */
  UNKNOWN;

  static ServerState fromWire(int v) {
    ServerState[] all = values();
    if (v < 0 || v >= all.length) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "server state: " + v + " (expected: 0 to " + (all.length - 1) + ")");
    }
    return all[v];
  }
}
