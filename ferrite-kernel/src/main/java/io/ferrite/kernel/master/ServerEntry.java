package io.ferrite.kernel.master;

import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import java.util.Map;
import java.util.TreeMap;

/** The master's record of one memory server. Guarded by the {@link MasterState} lock. */
final class ServerEntry {
  final int id;
  String name;
  String hostId;
  Map<String, String> addresses;
  ServerState state = ServerState.UNKNOWN;
  long lastHeartbeat;

  /**
   * Why the server is DEAD ({@link MasterState#REASON_LEFT}, {@link MasterState#REASON_TIMEOUT}),
   * null while it is not; transient like {@link #state}.
   */
  String deadReason;

  /** The server process that registered last (0: unknown, as after a master restart). */
  long incarnation;

  final TreeMap<Integer, RegionEntry> regions = new TreeMap<>();

  ServerEntry(int id) {
    this.id = id;
  }

  MemberInfo info() {
    return new MemberInfo(id, name, state, hostId, addresses);
  }
}
