package io.ferrite.kernel.client;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/** The entry point of the client core. */
public final class Ferrite {
  private Ferrite() {}

  /**
   * Connects to the cluster whose master is at {@code uri}: {@code ferrite://host:port} (the
   * master's tcp endpoint) or a fabric address such as {@code tcp://host:port} or {@code
   * local://node-0-1}. Opens a session unless the options say not to.
   *
   * @throws FerriteException UNAVAILABLE if the master does not answer, AUTH_FAILED if the
   *     credentials are wrong, INVALID_ARGUMENT for a malformed URI
   */
  public static FerriteClient connect(String uri, ClientOptions options) {
    return FerriteClient.open(masterAddress(uri), options);
  }

  /** Maps a cluster URI to the master's fabric address. */
  public static String masterAddress(String uri) {
    if (uri.startsWith("ferrite://")) {
      String hostPort = uri.substring("ferrite://".length());
      if (hostPort.endsWith("/")) {
        hostPort = hostPort.substring(0, hostPort.length() - 1);
      }
      if (!hostPort.contains(":")) {
        hostPort = hostPort + ":7100";
      }
      return "tcp://" + hostPort;
    }
    if (uri.startsWith("tcp://") || uri.startsWith("shm://") || uri.startsWith("local://")) {
      return uri;
    }
    throw new FerriteException(
        ErrorCode.INVALID_ARGUMENT,
        "cluster URI: '" + uri + "' (expected: ferrite://host:port, tcp://, shm:// or local://)");
  }
}
