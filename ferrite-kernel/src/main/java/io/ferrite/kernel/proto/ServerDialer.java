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
   * A new connection to {@code member} on one of {@code fabrics} it listens on, shm last (it
   * reaches a same-host server only). Blocks while it connects; the caller closes it.
   *
   * @throws FerriteException UNAVAILABLE when {@code member} is null or DEAD; the last fabric's
   *     failure when none connects
   */
  public static FabricConnection open(
      List<Fabric> fabrics, ConnectOptions options, int serverId, MemberInfo member) {
    if (member == null || member.state() == ServerState.DEAD) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "server " + serverId + " is unknown or DEAD");
    }
    RuntimeException last = null;
    for (boolean shm : new boolean[] {false, true}) {
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
