package io.ferrite.fabric.netty;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The mutual challenge-response of {@link Frames}: each side proves it knows the cluster secret by
 * an HMAC-SHA256 over both fresh nonces, with a distinct label per direction so that a proof cannot
 * be reflected back. The secret never crosses the wire.
 *
 * <pre>
 * serverProof = HMAC-SHA256(secret, "ferrite-server" | clientNonce | serverNonce | binding)
 * clientProof = HMAC-SHA256(secret, "ferrite-client" | serverNonce | clientNonce | binding)
 * </pre>
 *
 * <p>{@code binding} ties the proofs to the connection: under TLS it is the SHA-256 of the server's
 * certificate as each end sees it (RFC 5929 tls-server-end-point, {@link Tls#serverEndPoint}), so a
 * relay that terminates TLS with a certificate of its own (even one the client trusts) makes the
 * two ends hash different bytes and the handshake fails; without TLS it is empty, and the proofs
 * are the bytes they were before binding existed.
 */
final class Handshake {
  private Handshake() {}

  private static final byte[] SERVER_LABEL = "ferrite-server".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] CLIENT_LABEL = "ferrite-client".getBytes(StandardCharsets.US_ASCII);

  /** HELLO body before the cluster id: magic u32 | version u16 | idLen u16. */
  static final int HELLO_FIXED = 8;

  /** HELLO response body: nodeId i32 | serverNonce | serverProof. */
  static final int HELLO_RESPONSE = 4 + Frames.NONCE_BYTES + Frames.PROOF_BYTES;

  /** The longest HELLO body: a 255-character cluster id may take 3 bytes per character. */
  static final int MAX_HELLO = HELLO_FIXED + 255 * 3 + Frames.NONCE_BYTES;

  private static final SecureRandom RANDOM = new SecureRandom();

  static byte[] nonce() {
    byte[] n = new byte[Frames.NONCE_BYTES];
    RANDOM.nextBytes(n);
    return n;
  }

  /** The channel binding of a connection without TLS. */
  static final byte[] NO_BINDING = new byte[0];

  static byte[] serverProof(Credentials c, byte[] clientNonce, byte[] serverNonce) {
    return serverProof(c, clientNonce, serverNonce, NO_BINDING);
  }

  static byte[] clientProof(Credentials c, byte[] serverNonce, byte[] clientNonce) {
    return clientProof(c, serverNonce, clientNonce, NO_BINDING);
  }

  static byte[] serverProof(Credentials c, byte[] clientNonce, byte[] serverNonce, byte[] binding) {
    return hmac(c, SERVER_LABEL, clientNonce, serverNonce, binding);
  }

  static byte[] clientProof(Credentials c, byte[] serverNonce, byte[] clientNonce, byte[] binding) {
    return hmac(c, CLIENT_LABEL, serverNonce, clientNonce, binding);
  }

  /** Constant-time comparison, so the time taken does not reveal how much of a proof matched. */
  static boolean verify(byte[] expected, byte[] presented) {
    return MessageDigest.isEqual(expected, presented);
  }

  private static byte[] hmac(
      Credentials c, byte[] label, byte[] first, byte[] second, byte[] binding) {
    byte[] secret = c.secret();
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(label);
      mac.update(first);
      mac.update(second);
      mac.update(binding);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "HmacSHA256 is not available", e);
    } finally {
      java.util.Arrays.fill(secret, (byte) 0);
    }
  }
}
