package io.ferrite.fabric;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * What both ends of a connection must share to talk: the cluster id and a secret, for a {@link
 * Role}. The handshake is a mutual HMAC-SHA256 challenge-response over fresh nonces with the secret
 * of the role the client names, so no secret crosses the wire.
 *
 * <p>The root secret is {@link Role#ADMIN}'s; {@link #as(Role)} derives the others from it. A
 * server needs the root (it verifies every role); a client needs only its role's secret.
 */
public final class Credentials {
  private final String clusterId;
  private final byte[] secret;
  private final Role role;
  private final String origin;

  /** The root (ADMIN) secret of cluster {@code clusterId}. */
  public Credentials(String clusterId, byte[] secret) {
    this(clusterId, secret, Role.ADMIN, "");
  }

  /**
   * The secret of {@code role}.
   *
   * @param origin where the secret came from, e.g. its file, for messages ("" if unknown)
   */
  public Credentials(String clusterId, byte[] secret, Role role, String origin) {
    if (clusterId == null || clusterId.isEmpty() || clusterId.length() > 255) {
      throw new IllegalArgumentException(
          "clusterId: " + clusterId + " (expected: 1 to 255 characters)");
    }
    if (secret == null || secret.length < 16) {
      throw new IllegalArgumentException(
          "secret: " + (secret == null ? "null" : secret.length + " bytes") + " (expected: >= 16)");
    }
    if (role == null || origin == null) {
      throw new IllegalArgumentException("role: " + role + ", origin: " + origin);
    }
    this.clusterId = clusterId;
    this.secret = secret.clone();
    this.role = role;
    this.origin = origin;
  }

  public String clusterId() {
    return clusterId;
  }

  /** A copy of the secret. */
  public byte[] secret() {
    return secret.clone();
  }

  /** The role this secret proves. */
  public Role role() {
    return role;
  }

  /** Where the secret came from (a file), or "" if unknown. */
  public String origin() {
    return origin;
  }

  /** The same secret, described as coming from {@code origin} (a file) in messages. */
  public Credentials withOrigin(String origin) {
    return new Credentials(clusterId, secret, role, origin);
  }

  /** True if {@link #secretFor(Role) secretFor(r)} can answer: the root, or r's own secret. */
  public boolean canDerive(Role r) {
    return role == Role.ADMIN || role == r;
  }

  /**
   * The secret of {@code r}: this one if it is r's, else derived from the root ({@code
   * HMAC-SHA256(root, r's label)}).
   *
   * @throws FerriteException AUTH_FAILED if this is not the root and not r's secret: a derived
   *     secret derives nothing
   */
  public byte[] secretFor(Role r) {
    if (r == role) {
      return secret.clone();
    }
    if (role != Role.ADMIN) {
      throw new FerriteException(
          ErrorCode.AUTH_FAILED,
          "a " + role + " secret cannot stand for role " + r + " (only the root secret can)");
    }
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      return mac.doFinal(r.label());
    } catch (GeneralSecurityException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "HmacSHA256 is not available", e);
    }
  }

  /**
   * What a client whose secret the server at {@code server} refused reports (every fabric says it
   * the same way): "the secret in FILE is not this cluster's (or not valid for role R)".
   */
  public String wrongSecretMessage(String server) {
    String where = origin.isEmpty() ? "the secret given" : "the secret in " + origin;
    return where
        + " is not this cluster's (or not valid for role "
        + role
        + "): refused by the server at "
        + server
        + " of cluster '"
        + clusterId
        + "'";
  }

  /** The credentials of role {@code r}, derived from these (see {@link #secretFor}). */
  public Credentials as(Role r) {
    return r == role ? this : new Credentials(clusterId, secretFor(r), r, origin);
  }

  @Override
  public String toString() {
    return "Credentials[cluster=" + clusterId + ", role=" + role + ", secret=<hidden>]";
  }

  /** Same cluster, role and secret (the origin is only a description). */
  @Override
  public boolean equals(Object o) {
    return o instanceof Credentials c
        && c.clusterId.equals(clusterId)
        && c.role == role
        && MessageDigest.isEqual(c.secret, secret);
  }

  @Override
  public int hashCode() {
    return (clusterId.hashCode() * 31 + Arrays.hashCode(secret)) * 31 + role.hashCode();
  }
}
