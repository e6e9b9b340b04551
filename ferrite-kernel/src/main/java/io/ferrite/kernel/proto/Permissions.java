package io.ferrite.kernel.proto;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;

/**
 * The one role check every service calls ({@code docs/SECURITY.md}, "Principals and roles"): an
 * opcode that only servers or the operator may run refuses a {@link Role#CLIENT} with {@code
 * PERMISSION_DENIED}, naming the opcode and the role it needs. The role is what the connection's
 * handshake proved ({@link RpcContext#role()}), so the check is a field read: nothing on the data
 * path pays for it.
 */
public final class Permissions {
  private Permissions() {}

  /**
   * Throws unless the caller holds {@code required} (ADMIN holds every role).
   *
   * @param op the opcode as a person reads it, e.g. {@code "master REGISTER (opcode 1)"}
   * @throws FerriteException PERMISSION_DENIED (not retryable) if the caller's role is less
   */
  public static void require(RpcContext caller, Role required, String op) {
    if (!caller.role().atLeast(required)) {
      throw denied(caller, required, op);
    }
  }

  /** The refusal {@link #require} throws. */
  public static FerriteException denied(RpcContext caller, Role required, String op) {
    return new FerriteException(
        ErrorCode.PERMISSION_DENIED,
        op
            + " needs role "
            + (required == Role.ADMIN ? "ADMIN" : required + " or ADMIN")
            + " (the caller "
            + caller.peer()
            + " authenticated as "
            + caller.role()
            + ")");
  }
}
