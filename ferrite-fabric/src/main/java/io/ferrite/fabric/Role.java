package io.ferrite.fabric;

import java.nio.charset.StandardCharsets;

/**
 * The principal a connection's handshake proved: which of the cluster's secrets its client holds.
 *
 * <p>The root cluster secret (the {@code secret} file) is {@link #ADMIN}; the {@link #SERVER} and
 * {@link #CLIENT} secrets are derived from it, {@code HMAC-SHA256(root, "ferrite-role-server")} and
 * {@code HMAC-SHA256(root, "ferrite-role-client")}, so whoever holds the root can verify (and act
 * as) every role, while a process holding only a derived secret can neither derive the root nor the
 * other role's secret. Servers hold the root; they authenticate to each other as {@link #SERVER}.
 * Services refuse server-only and admin opcodes to a {@link #CLIENT} with {@code PERMISSION_DENIED}
 * ({@code docs/SECURITY.md}, "Principals and roles").
 *
 * <p>The wire code is the byte a HELLO names the role with: stable, never renumber.
 */
public enum Role {
  /** Data ops of every face: sessions, allocations, reads and writes of what it was given. */
  CLIENT(0, "ferrite-role-client"),
  /** A memory server or master talking to another: registration, heartbeats, shard moves. */
  SERVER(1, "ferrite-role-server"),
  /** The root secret's holder: everything a server may do, and the operator's commands. */
  ADMIN(2, null);

  private final int wire;
  private final byte[] label;

  Role(int wire, String label) {
    this.wire = wire;
    this.label = label == null ? null : label.getBytes(StandardCharsets.US_ASCII);
  }

  /** The byte a HELLO carries. */
  public int wire() {
    return wire;
  }

  /** The HMAC label this role's secret is derived with; null for {@link #ADMIN} (the root). */
  byte[] label() {
    return label == null ? null : label.clone();
  }

  /** True if this role may do what {@code required} may: ADMIN and SERVER both pass SERVER. */
  public boolean atLeast(Role required) {
    return required == CLIENT || this == ADMIN || this == required;
  }

  /** The role of a wire byte, or null if there is none. */
  public static Role fromWire(int wire) {
    for (Role r : values()) {
      if (r.wire == wire) {
        return r;
      }
    }
    return null;
  }
}
