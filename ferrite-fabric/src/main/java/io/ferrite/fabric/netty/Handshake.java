package io.ferrite.fabric.netty;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Role;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The mutual challenge-response of {@link Frames}: each side proves it knows the secret of the role
 * the client names ({@link Role}) by an HMAC-SHA256 over both fresh nonces, with a distinct label
 * per direction so that a proof cannot be reflected back. No secret crosses the wire. The server
 * holds the root and derives the role's secret ({@link Credentials#secretFor}).
 *
 * <pre>
 * helloCheck  = HMAC-SHA256(roleSecret, "ferrite-hello"  | role | clientNonce)
 * serverProof = HMAC-SHA256(roleSecret, "ferrite-server" | role | clientNonce | serverNonce | binding)
 * clientProof = HMAC-SHA256(roleSecret, "ferrite-client" | role | serverNonce | clientNonce | binding)
 * </pre>
 *
 * <p>Which side learns what: the client checks serverProof before it proves itself, so it never
 * talks to a peer without the secret; but a failed serverProof alone cannot tell "my secret is
 * wrong" from "this server is not the cluster's". The HELLO's helloCheck lets a genuine server tell
 * first: a check that does not verify is answered AUTH_FAILED with {@link #WRONG_SECRET}, which the
 * client reports as its own wrong secret ({@link Credentials#wrongSecretMessage}). A check over the
 * client's own nonce only cannot be replayed into an AUTH (that proof covers the server's fresh
 * nonce too), so it adds nothing an impostor can use. A failed serverProof after a passed check
 * then means the peer is not the cluster's server.
 *
 * <p>{@code binding} ties the proofs to the connection: under TLS it is the SHA-256 of the server's
 * certificate as each end sees it (RFC 5929 tls-server-end-point, {@link Tls#serverEndPoint}), so a
 * relay that terminates TLS with a certificate of its own (even one the client trusts) makes the
 * two ends hash different bytes and the handshake fails; without TLS it is empty.
 */
final class Handshake {
  private Handshake() {}

  private static final byte[] SERVER_LABEL = "ferrite-server".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] CLIENT_LABEL = "ferrite-client".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] HELLO_LABEL = "ferrite-hello".getBytes(StandardCharsets.US_ASCII);

  /** HELLO body before the cluster id: magic u32 | version u16 | idLen u16. */
  static final int HELLO_FIXED = 8;

  /** HELLO body after the cluster id: clientNonce 16 B | role u8 | helloCheck 32 B. */
  static final int HELLO_TAIL = Frames.NONCE_BYTES + 1 + Frames.PROOF_BYTES;

  /**
   * How a server's AUTH_FAILED answer to a HELLO begins when the helloCheck did not verify: the
   * client's secret is wrong for the role it named. Part of the protocol: the client matches it.
   */
  static final String WRONG_SECRET = "the client's secret is not valid for role ";

  /** HELLO response body: nodeId i32 | serverNonce | serverProof. */
  static final int HELLO_RESPONSE = 4 + Frames.NONCE_BYTES + Frames.PROOF_BYTES;

  /** The longest HELLO body: a 255-character cluster id may take 3 bytes per character. */
  static final int MAX_HELLO = HELLO_FIXED + 255 * 3 + HELLO_TAIL;

  private static final SecureRandom RANDOM = new SecureRandom();

  static byte[] nonce() {
    byte[] n = new byte[Frames.NONCE_BYTES];
    RANDOM.nextBytes(n);
    return n;
  }

  /** The channel binding of a connection without TLS. */
  static final byte[] NO_BINDING = new byte[0];

  static byte[] helloCheck(Credentials c, Role role, byte[] clientNonce) {
    return hmac(c, role, HELLO_LABEL, clientNonce, new byte[0], NO_BINDING);
  }

  static byte[] serverProof(Credentials c, Role role, byte[] clientNonce, byte[] serverNonce) {
    return serverProof(c, role, clientNonce, serverNonce, NO_BINDING);
  }

  static byte[] clientProof(Credentials c, Role role, byte[] serverNonce, byte[] clientNonce) {
    return clientProof(c, role, serverNonce, clientNonce, NO_BINDING);
  }

  static byte[] serverProof(
      Credentials c, Role role, byte[] clientNonce, byte[] serverNonce, byte[] binding) {
    return hmac(c, role, SERVER_LABEL, clientNonce, serverNonce, binding);
  }

  static byte[] clientProof(
      Credentials c, Role role, byte[] serverNonce, byte[] clientNonce, byte[] binding) {
    return hmac(c, role, CLIENT_LABEL, serverNonce, clientNonce, binding);
  }

  /**
   * What a client reports when the server refused its HELLO with {@code serverMessage}: its own
   * wrong secret, naming the file, if the server said so ({@link #WRONG_SECRET}); else the server's
   * reason.
   */
  static FerriteException refusedHello(
      Credentials c, String address, ErrorCode code, String serverMessage) {
    if (code == ErrorCode.AUTH_FAILED && serverMessage.startsWith(WRONG_SECRET)) {
      return new FerriteException(ErrorCode.AUTH_FAILED, c.wrongSecretMessage(address));
    }
    return new FerriteException(code, address + ": " + serverMessage);
  }

  /** Constant-time comparison, so the time taken does not reveal how much of a proof matched. */
  static boolean verify(byte[] expected, byte[] presented) {
    return MessageDigest.isEqual(expected, presented);
  }

  private static byte[] hmac(
      Credentials c, Role role, byte[] label, byte[] first, byte[] second, byte[] binding) {
    byte[] secret = c.secretFor(role);
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(label);
      mac.update((byte) role.wire());
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
