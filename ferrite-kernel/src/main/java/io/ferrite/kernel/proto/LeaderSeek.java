package io.ferrite.kernel.proto;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Finds the master of a group that serves, for a client's master connection and a memory server's
 * link alike: the addresses in turn (the leader last named first), asking each its role
 * (MASTER_INFO), and on a follower that names the leader, that leader next.
 */
public final class LeaderSeek {
  private LeaderSeek() {}

  /** The connection to the master that serves, and its address. */
  public record Found(FabricConnection connection, String address) {}

  /**
   * Connects to the leader of {@code addresses} ({@code hint}, the leader last named, first; may be
   * null), connecting with {@code connect}. One address is a single master: connected, not asked.
   *
   * @throws FerriteException the last failure (NOT_LEADER saying what the last master answered, or
   *     its connect's), retryable, when none serves now (an election under way)
   */
  public static Found seek(
      List<String> addresses,
      String hint,
      Function<String, FabricConnection> connect,
      Duration rpcTimeout) {
    if (addresses.size() == 1) {
      return new Found(connect.apply(addresses.get(0)), addresses.get(0));
    }
    List<String> order = new ArrayList<>();
    if (hint != null) {
      order.add(hint);
    }
    for (String a : addresses) {
      if (!order.contains(a)) {
        order.add(a);
      }
    }
    FerriteException last = null;
    for (int i = 0; i < order.size(); i++) {
      String a = order.get(i);
      FabricConnection c;
      try {
        c = connect.apply(a);
      } catch (FerriteException e) {
        last = e;
        continue;
      }
      try {
        MasterStub.MasterInfo info = new MasterStub(c, rpcTimeout).masterInfo();
        if (info.role() == MasterStub.ROLE_SINGLE || info.role() == MasterStub.ROLE_LEADER) {
          return new Found(c, a);
        }
        c.close();
        String leader = info.leader();
        if (!leader.isEmpty() && !leader.equals(a)) {
          int at = order.indexOf(leader);
          if (at > i) {
            order.remove(at); // not tried yet: next instead
          }
          if (at > i || at < 0 || order.size() <= 2 * addresses.size()) {
            // Next; a leader tried already is tried once more (it may have just won), boundedly.
            order.add(i + 1, leader);
          }
        }
        last =
            new FerriteException(
                ErrorCode.NOT_LEADER,
                "the master at "
                    + a
                    + " is a "
                    + info.roleName()
                    + (leader.isEmpty() ? " (no leader known)" : "; leader: " + leader));
      } catch (FerriteException e) {
        c.close();
        last = e;
      }
    }
    throw last != null
        ? last
        : new FerriteException(ErrorCode.UNAVAILABLE, "no master address to connect to");
  }
}
