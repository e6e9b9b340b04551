package io.ferrite.fabric;

/**
 * Every failure Ferrite reports, with its wire code, its {@link ErrorCategory} and whether a retry
 * of the same request can succeed. Wire codes are stable: never renumber, only append.
 */
public enum ErrorCode {
  /** Not an error: the wire status of a successful response. */
  OK(0, ErrorCategory.INTERNAL, false),
  BAD_RKEY(1, ErrorCategory.ACCESS_DENIED, false),
  OUT_OF_BOUNDS(2, ErrorCategory.INVALID_ARGUMENT, false),
  MISALIGNED(3, ErrorCategory.INVALID_ARGUMENT, false),
  NO_SUCH_REGION(4, ErrorCategory.NOT_FOUND, false),
  UNKNOWN_SERVICE(5, ErrorCategory.NOT_FOUND, false),
  UNKNOWN_OPCODE(6, ErrorCategory.INVALID_ARGUMENT, false),
  INVALID_ARGUMENT(7, ErrorCategory.INVALID_ARGUMENT, false),
  /** Every RPC thread of the server is busy and its queue is full; back off and retry. */
  BUSY(8, ErrorCategory.RESOURCE_EXHAUSTED, true),
  TIMEOUT(9, ErrorCategory.TIMEOUT, true),
  /** The connection is gone (peer died, closed, or network failure). */
  UNAVAILABLE(10, ErrorCategory.UNAVAILABLE, true),
  AUTH_FAILED(11, ErrorCategory.ACCESS_DENIED, false),
  PROTOCOL(12, ErrorCategory.PROTOCOL, false),
  INTERNAL(13, ErrorCategory.INTERNAL, false),
  NOT_FOUND(14, ErrorCategory.NOT_FOUND, false),
  NO_SPACE(15, ErrorCategory.RESOURCE_EXHAUSTED, false),
  CONFLICT(16, ErrorCategory.CONFLICT, true),
  TOO_LARGE(17, ErrorCategory.RESOURCE_EXHAUSTED, false),
  /** The session or lease named by the request has expired; open a new one. */
  SESSION_EXPIRED(18, ErrorCategory.CONFLICT, false),
  /** The request was dropped (fault injection, or a peer that shed it); it did not happen. */
  DROPPED(19, ErrorCategory.UNAVAILABLE, true),
  /** The fabric cannot serve this request (e.g. shm fabric to a server on another host). */
  UNSUPPORTED(20, ErrorCategory.INVALID_ARGUMENT, false),
  /**
   * What the request names has moved to another server (e.g. a kv shard after a re-sharding): it
   * did not happen here; fetch the placement again and send it there.
   */
  MOVED(21, ErrorCategory.NOT_FOUND, false),
  /**
   * An authenticated caller whose role or capability rights do not allow the op (e.g. a write with
   * a read-only key). {@link #BAD_RKEY} is for a key that grants nothing on the bytes.
   */
  PERMISSION_DENIED(22, ErrorCategory.ACCESS_DENIED, false),
  /**
   * What the request names was held in memory the kernel declared lost (a server came back without
   * the region: a clean stop, a reboot); the message names the file, namespace or shard. A retry
   * cannot bring it back; deleting it works.
   */
  DATA_LOST(23, ErrorCategory.NOT_FOUND, false),
  /**
   * The master that answered is not the leader of its Raft group (a follower, or a leader that lost
   * its majority): the message names the leader's address when it knows one ("leader:
   * tcp://host:port"). The request did not happen; the client asks the leader (or the next master
   * it knows) instead.
   */
  NOT_LEADER(24, ErrorCategory.UNAVAILABLE, true);

  private static final ErrorCode[] BY_WIRE;

  static {
    int max = 0;
    for (ErrorCode c : values()) {
      max = Math.max(max, c.wire);
    }
    BY_WIRE = new ErrorCode[max + 1];
    for (ErrorCode c : values()) {
      BY_WIRE[c.wire] = c;
    }
  }

  private final int wire;
  private final ErrorCategory category;
  private final boolean retryable;

  ErrorCode(int wire, ErrorCategory category, boolean retryable) {
    this.wire = wire;
    this.category = category;
    this.retryable = retryable;
  }

  /** The 16-bit status carried in a response frame. */
  public int wire() {
    return wire;
  }

  public ErrorCategory category() {
    return category;
  }

  /** True when repeating the same request later may succeed. */
  public boolean retryable() {
    return retryable;
  }

  /** Maps a wire status back to its code; an unknown status maps to {@link #INTERNAL}. */
  public static ErrorCode fromWire(int wire) {
    if (wire >= 0 && wire < BY_WIRE.length && BY_WIRE[wire] != null) {
      return BY_WIRE[wire];
    }
    return INTERNAL;
  }
}
