package io.ferrite.fabric;

/**
 * The one frame format of every byte-stream fabric (tcp, and shm's control socket). Little-endian.
 *
 * <pre>
 *  0               4       5       6               8                               16
 *  +---------------+-------+-------+---------------+-------------------------------+
 *  | frameLength   | type  | flags | status        | requestId                     |
 *  | u32           | u8    | u8    | u16           | u64                           |
 *  +---------------+-------+-------+---------------+-------------------------------+
 *  | body: frameLength - 12 bytes ...
 * </pre>
 *
 * {@code frameLength} counts every byte after itself (so it is at least {@link
 * #HEADER_AFTER_LENGTH}). A request has flags 0 and status 0; its response has the same type and
 * request id, flag {@link #FLAG_RESPONSE}, and a status that is {@link ErrorCode#wire()} (0 = OK).
 * An error response's body is the UTF-8 message.
 *
 * <h2>Handshake (before any other frame; anything else closes the connection)</h2>
 *
 * <pre>
 * client -> HELLO     magic u32 'FRRT' | version u16 | idLen u16 | clusterId utf8 | clientNonce 16 B
 *                     | role u8 | helloCheck 32 B = HMAC-SHA256(roleSecret, "ferrite-hello" | role | clientNonce)
 * server -> HELLO rsp nodeId i32 | serverNonce 16 B | serverProof 32 B
 *                     serverProof = HMAC-SHA256(roleSecret, "ferrite-server" | role | clientNonce | serverNonce)
 *                     | binding (TLS: SHA-256 of the server certificate, RFC 5929; else empty)
 * client -> AUTH      clientProof 32 B = HMAC-SHA256(roleSecret, "ferrite-client" | role | serverNonce | clientNonce | binding)
 * server -> AUTH rsp  (empty body) or an error response and close
 * </pre>
 *
 * {@code role} is the {@link Role} the client claims (its wire byte); {@code roleSecret} is that
 * role's secret, which the server derives from the root ({@link Credentials#secretFor}). The client
 * checks serverProof before sending AUTH, so a client never talks to a server that does not know
 * the secret either. A wrong cluster id or version, or a helloCheck that does not verify (the
 * client's secret is wrong for its role), is answered AUTH_FAILED and a close, so that the client
 * can say which it was.
 *
 * <h2>Bodies of requests (responses in brackets)</h2>
 *
 * <pre>
 * READ   regionId i32 | pad u32 | rkey u64 | offset u64 | length u32        [data]
 * WRITE  regionId i32 | pad u32 | rkey u64 | offset u64 | data ...          [empty]
 * CAS    regionId i32 | pad u32 | rkey u64 | offset u64 | expect u64 | update u64   [previous u64]
 * FAA    regionId i32 | pad u32 | rkey u64 | offset u64 | delta u64         [previous u64]
 * MAP    regionId i32 | pad u32 | rkey u64                                  [length u64 | pathLen u16 | path utf8
 *                                                                           | grant u8 | keysPathLen u16 | keysPath utf8]
 * RPC    service u16 | opcode u16 | deadlineMillis u32 | request ...       [response ...]
 * RINGS  (empty)                                                           [pathLen u16 | path utf8]
 * DOORBELL (empty; either direction; never answered: flags 0, status 0, requestId 0)
 * </pre>
 *
 * MAP is the shm fabric's registration step: after checking that the key grants something in the
 * region ({@link MappedRegion#grantOf}: 1 owner, 2 read, 3 block) the server tells a same-host
 * client which file to map, and which block key file ({@link BlockKeys}, "" if none) to check its
 * ops against; a response that ends after the path (an older server) means grant 1. RINGS and
 * DOORBELL are the shm fabric's too (a tcp server closes the connection on either): RINGS asks for
 * a file of RPC rings shared by both ends, DOORBELL wakes the other end's consumer of those rings
 * when it sleeps ({@code docs/KERNEL.md}, "shm RPC rings").
 */
public final class Frames {
  private Frames() {}

  public static final int MAGIC = 0x54525246; // "FRRT" little-endian
  public static final int PROTOCOL_VERSION = 2;

  public static final int LENGTH_FIELD = 4;

  /** type + flags + status + requestId. */
  public static final int HEADER_AFTER_LENGTH = 12;

  public static final int HEADER = LENGTH_FIELD + HEADER_AFTER_LENGTH;

  public static final int TYPE_HELLO = 1;
  public static final int TYPE_AUTH = 2;
  public static final int TYPE_READ = 10;
  public static final int TYPE_WRITE = 11;
  public static final int TYPE_CAS = 12;
  public static final int TYPE_FAA = 13;
  public static final int TYPE_MAP = 14;
  public static final int TYPE_RPC = 20;
  public static final int TYPE_RINGS = 15;
  public static final int TYPE_DOORBELL = 16;

  public static final int FLAG_RESPONSE = 1;

  public static final int NONCE_BYTES = 16;
  public static final int PROOF_BYTES = 32;

  /** regionId + pad + rkey + offset. */
  public static final int REGION_OP_HEADER = 24;
}
