package io.ferrite.kernel.proto;

import java.util.Map;

/**
 * A memory server as the master's membership knows it.
 *
 * @param serverId the id the master assigned at first registration (kept across restarts)
 * @param name the server's directory name, for humans
 * @param state ALIVE, DEAD or UNKNOWN
 * @param hostId the identity of the server's host (hostname + boot id); a client on the same host
 *     may use the shm fabric
 * @param addresses the server's endpoint per fabric name, e.g. {@code tcp -> tcp://127.0.0.1:7101}
 */
public record MemberInfo(
    int serverId, String name, ServerState state, String hostId, Map<String, String> addresses) {
  public MemberInfo {
    addresses = Map.copyOf(addresses);
  }
}
