package io.ferrite.fabric;

import java.time.Duration;

/**
 * How a client connects.
 *
 * @param credentials what the client proves in the handshake
 * @param connectTimeout bound on connect plus handshake
 * @param opTimeout deadline of one-sided ops (RPCs carry their own)
 * @param maxInFlight bound on a connection's ops in flight (sent, not yet ended): a caller issuing
 *     ops faster than they are answered waits for one to end rather than queueing without limit
 *     (fabrics whose ops complete at once, like shm's memory ops, have nothing to bound)
 */
public record ConnectOptions(
    Credentials credentials, Duration connectTimeout, Duration opTimeout, int maxInFlight) {
  /** Default of {@link #maxInFlight()}. */
  public static final int DEFAULT_MAX_IN_FLIGHT = 4096;

  public ConnectOptions {
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight: " + maxInFlight + " (expected: >= 1)");
    }
  }

  public ConnectOptions(Credentials credentials, Duration connectTimeout, Duration opTimeout) {
    this(credentials, connectTimeout, opTimeout, DEFAULT_MAX_IN_FLIGHT);
  }

  public static ConnectOptions of(Credentials credentials) {
    return new ConnectOptions(credentials, Duration.ofSeconds(5), Duration.ofSeconds(10));
  }

  public ConnectOptions withMaxInFlight(int max) {
    return new ConnectOptions(credentials, connectTimeout, opTimeout, max);
  }
}
