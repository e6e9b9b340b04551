package io.ferrite.fabric.tcp;

import io.ferrite.fabric.netty.Tls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Self-signed certificates for the TLS tests, made once per test JVM by {@link TlsFiles} (keytool
 * takes a second): {@code server} is what the servers present, {@code other} a second pair (a
 * relay's, or a trust file that does not match). Deleted when the JVM exits.
 */
final class TlsTesting {
  private TlsTesting() {}

  private static Path server;
  private static Path other;

  /** The directory of the servers' pair (cert.pem, key.pem). */
  static synchronized Path server() {
    if (server == null) {
      server = pair("server");
    }
    return server;
  }

  /** The directory of a second, unrelated pair. */
  static synchronized Path other() {
    if (other == null) {
      other = pair("other");
    }
    return other;
  }

  /** TLS that serves with the servers' pair and trusts it. */
  static Tls tls() {
    Path d = server();
    return Tls.fromPem(d.resolve(TlsFiles.CERT), d.resolve(TlsFiles.KEY), d.resolve(TlsFiles.CERT));
  }

  /** A tcp fabric with TLS, as {@link TcpTestSupport#newFabric()} makes without. */
  static TcpFabric fabric(int ioThreads, Duration handshakeTimeout) {
    return new TcpFabric(ioThreads, handshakeTimeout, tls());
  }

  private static Path pair(String name) {
    try {
      Path d = Files.createTempDirectory("ferrite-tls-" + name + "-");
      d.toFile().deleteOnExit();
      d.resolve(TlsFiles.CERT).toFile().deleteOnExit();
      d.resolve(TlsFiles.KEY).toFile().deleteOnExit();
      TlsFiles.generate(d, TlsFiles.LOOPBACK, 2);
      return d;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
