package io.ferrite.fabric;

/**
 * What kind of failure a {@link FerriteException} reports. The category tells a caller what to do
 * about it; {@link ErrorCode#retryable()} tells whether repeating the same request can help.
 */
public enum ErrorCategory {
  /** The request itself is wrong (bad offset, misaligned atomic, malformed argument). */
  INVALID_ARGUMENT,
  /** The caller lacks the capability: wrong rkey, failed authentication. */
  ACCESS_DENIED,
  /** The named thing (region, service, server, block) does not exist. */
  NOT_FOUND,
  /** The request lost a race with another (e.g. concurrent allocation), or the state forbids it. */
  CONFLICT,
  /** A capacity limit was hit: no free blocks, a full queue, an oversize value. */
  RESOURCE_EXHAUSTED,
  /** The peer is not reachable, died, or the connection was closed. */
  UNAVAILABLE,
  /** The deadline passed before an answer arrived; the operation may or may not have happened. */
  TIMEOUT,
  /** The peer spoke the wire protocol wrongly. The connection is closed. */
  PROTOCOL,
  /** A bug or an unexpected condition on the peer. */
  INTERNAL
}
