package io.ferrite.fabric;

import java.util.Arrays;

/**
 * What both ends of a connection must share to talk: the cluster id and the cluster secret. The
 * handshake is a mutual HMAC-SHA256 challenge-response over fresh nonces, so the secret never
 * crosses the wire.
 */
public final class Credentials {
  private final String clusterId;
  private final byte[] secret;

  public Credentials(String clusterId, byte[] secret) {
    if (clusterId == null || clusterId.isEmpty() || clusterId.length() > 255) {
      throw new IllegalArgumentException(
          "clusterId: " + clusterId + " (expected: 1 to 255 characters)");
    }
    if (secret == null || secret.length < 16) {
      throw new IllegalArgumentException(
          "secret: " + (secret == null ? "null" : secret.length + " bytes") + " (expected: >= 16)");
    }
    this.clusterId = clusterId;
    this.secret = secret.clone();
  }

  public String clusterId() {
    return clusterId;
  }

  /** A copy of the secret. */
  public byte[] secret() {
    return secret.clone();
  }

  @Override
  public String toString() {
    return "Credentials[cluster=" + clusterId + ", secret=<hidden>]";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Credentials c
        && c.clusterId.equals(clusterId)
        && java.security.MessageDigest.isEqual(c.secret, secret);
  }

  @Override
  public int hashCode() {
    return clusterId.hashCode() * 31 + Arrays.hashCode(secret);
  }
}
