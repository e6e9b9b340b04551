package io.ferrite.fabric;

import java.time.Duration;

/**
 * How a client connects.
 *
 * @param credentials what the client proves in the handshake
 * @param connectTimeout bound on connect plus handshake
 * @param opTimeout deadline of one-sided ops (RPCs carry their own)
 */
public record ConnectOptions(Credentials credentials, Duration connectTimeout, Duration opTimeout) {
  public static ConnectOptions of(Credentials credentials) {
    return new ConnectOptions(credentials, Duration.ofSeconds(5), Duration.ofSeconds(10));
  }
}
