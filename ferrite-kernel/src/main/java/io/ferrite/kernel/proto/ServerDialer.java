package io.ferrite.kernel.proto;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import java.util.List;

/**
 * Opens a connection to a memory server from its membership entry: the one dialing code shared by
 * the master (revokes, {@code MasterContext.connect}) and memory servers calling each other ({@code
 * ServiceContext.peer}). The role is the one {@code options}' credentials prove: SERVER for both,
 * so the callee's {@link Permissions} checks let server-only opcodes through and refuse them to a
 * CLIENT.
 */
public final class ServerDialer {
  private ServerDialer() {}

  /**
   * A new connection to {@code member} on one of {@code fabrics} it listens on, shm last (the host
   * of the caller is not known here: shm reaches a same-host server only). Blocks while it
   * connects; the caller closes it.
   *
   * @throws FerriteException UNAVAILABLE when {@code member} is null or DEAD; the last fabric's
   *     failure when none connects
   */
  public static FabricConnection open(
      List<Fabric> fabrics, ConnectOptions options, int serverId, MemberInfo member) {
    return open(fabrics, options, null, serverId, member);
  }

  /**
   * As above, from a process whose host identity ({@link HostIdentity#local}) is {@code hostId}:
   * when {@code member} reports the same identity, shm first (tcp if shm fails to connect), as a
   * client's {@code auto} fabric chooses; any other member, or a null {@code hostId}, shm last. The
   * identity, not a successful shm connect, decides: processes in network namespaces of their own
   * (the multi-host tests' "hosts") share /dev/shm, so shm would connect there, and must not be
   * used first.
   */
  public static FabricConnection open(
      List<Fabric> fabrics,
      ConnectOptions options,
      String hostId,
      int serverId,
      MemberInfo member) {
    if (member == null || member.state() == ServerState.DEAD) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "server " + serverId + " is unknown or DEAD");
    }
    boolean sameHost = hostId != null && hostId.equals(member.hostId());
    RuntimeException last = null;
    for (boolean shm : sameHost ? new boolean[] {true, false} : new boolean[] {false, true}) {
      for (Fabric f : fabrics) {
        String address = member.addresses().get(f.name());
        if (address == null || f.name().equals("shm") != shm) {
          continue;
        }
        try {
          return f.connect(address, options);
        } catch (RuntimeException e) {
          last = e;
        }
      }
    }
    throw last != null
        ? last
        : new FerriteException(
            ErrorCode.UNAVAILABLE,
            "no fabric of this process reaches server " + serverId + " at " + member.addresses());
  }
}
