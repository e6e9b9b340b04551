package io.ferrite.nodes;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * A failure of a nodes operation, with a {@link Reason} more specific than the kernel's {@link
 * ErrorCode}. The reason travels on the wire as a {@code [REASON]} prefix of the message, so the
 * kernel's error codes need no entries of their own; {@link #from} turns a received {@link
 * FerriteException} back into a {@code NodesException}.
 *
 * <p>Every failed operation changed nothing: the master checks everything before it commits.
 */
public final class NodesException extends FerriteException {
  /** What went wrong, the kernel code it travels as, and whether a retry can help. */
  public enum Reason {
    /** Empty, relative, non-normalised, over-long or NUL-containing path. */
    INVALID_PATH(ErrorCode.INVALID_ARGUMENT, false),
    INVALID_ARGUMENT(ErrorCode.INVALID_ARGUMENT, false),
    /** No node at the path (or it is still being created by its writer). */
    NOT_FOUND(ErrorCode.NOT_FOUND, false),
    /** A File, Directory, Table or Bag already exists at the path. */
    ALREADY_EXISTS(ErrorCode.CONFLICT, false),
    /** The parent (or an ancestor) is not a container. */
    NOT_A_CONTAINER(ErrorCode.INVALID_ARGUMENT, false),
    /** The parent is a container that does not accept this type (e.g. a File in a Table). */
    WRONG_CONTAINER(ErrorCode.INVALID_ARGUMENT, false),
    /** The operation does not apply to this node type (e.g. read a Directory). */
    WRONG_TYPE(ErrorCode.INVALID_ARGUMENT, false),
    /** Removing a non-empty container without recursion. */
    NOT_EMPTY(ErrorCode.CONFLICT, false),
    /** Moving a container into itself or its own subtree, or moving the root. */
    INVALID_MOVE(ErrorCode.INVALID_ARGUMENT, false),
    /** Another session holds the node's write lease; retry when it is closed. */
    WRITE_LOCKED(ErrorCode.CONFLICT, true),
    /** This handle does not hold the write lease (closed, or another session's). */
    NOT_WRITER(ErrorCode.CONFLICT, false),
    /** A read past the end of the node's data. */
    PAST_END(ErrorCode.OUT_OF_BOUNDS, false),
    /** The stream or handle is closed. */
    CLOSED(ErrorCode.INVALID_ARGUMENT, false),
    /** No storage class has a free block left; what was written before is kept. */
    NO_SPACE(ErrorCode.NO_SPACE, false),
    /** A value changed while it was read (it was replaced); read it again. */
    CHANGED(ErrorCode.CONFLICT, true),
    /**
     * The bytes asked for sat in blocks whose memory is gone (their server came back without them);
     * or a write to such a node. Remove the node and write it again.
     */
    DATA_LOST(ErrorCode.DATA_LOST, false);

    private final ErrorCode code;
    private final boolean retryable;

    Reason(ErrorCode code, boolean retryable) {
      this.code = code;
      this.retryable = retryable;
    }

    public ErrorCode code() {
      return code;
    }
  }

  private final Reason reason;

  public NodesException(Reason reason, String message) {
    super(reason.code, "[" + reason.name() + "] " + message);
    this.reason = reason;
  }

  private NodesException(Reason reason, String wireMessage, Throwable cause) {
    super(reason.code, wireMessage, cause);
    this.reason = reason;
  }

  /**
   * A new exception with the reason (or kernel code) of {@code t} and {@code what} in front of its
   * message, so that the same failure reported twice (a write, then the close) is two objects.
   */
  public static FerriteException context(Throwable t, String what) {
    FerriteException e = from(t);
    String d = e.detail();
    if (e instanceof NodesException ne) {
      String rest = d.startsWith("[") && d.indexOf(']') > 0 ? d.substring(d.indexOf(']') + 2) : d;
      return new NodesException(ne.reason, "[" + ne.reason.name() + "] " + what + ": " + rest, e);
    }
    return new FerriteException(e.code(), what + ": " + d, e);
  }

  /** {@code REASON: text}, e.g. {@code NOT_FOUND: no such node /a}. */
  @Override
  public String getMessage() {
    String d = detail();
    String rest =
        d.startsWith("[") && d.indexOf(']') > 0 ? d.substring(d.indexOf(']') + 1).trim() : d;
    return reason.name() + ": " + rest;
  }

  public Reason reason() {
    return reason;
  }

  @Override
  public boolean retryable() {
    return reason.retryable;
  }

  /**
   * The nodes failure inside {@code t} (unwrapping completion layers): a received error with a
   * {@code [REASON]} prefix becomes a {@code NodesException}; other failures stay what they are,
   * except {@link ErrorCode#NO_SPACE}, which becomes {@link Reason#NO_SPACE}.
   */
  public static FerriteException from(Throwable t) {
    FerriteException e = FerriteException.unwrap(t);
    if (e instanceof NodesException) {
      return e;
    }
    String d = e.detail();
    if (d != null && d.startsWith("[")) {
      int end = d.indexOf(']');
      if (end > 1) {
        try {
          Reason r = Reason.valueOf(d.substring(1, end));
          return new NodesException(r, d, e);
        } catch (IllegalArgumentException notOurs) {
          // Fall through: not a nodes reason.
        }
      }
    }
    if (e.code() == ErrorCode.NO_SPACE) {
      return new NodesException(Reason.NO_SPACE, "[NO_SPACE] " + d, e);
    }
    return e;
  }
}
