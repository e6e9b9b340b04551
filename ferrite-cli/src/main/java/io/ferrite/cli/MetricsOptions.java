package io.ferrite.cli;

import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * {@code --metrics-port} and {@code --metrics-host}: where a process serves {@code /metrics} (the
 * configuration keys {@code metrics.port} and {@code metrics.host}).
 */
final class MetricsOptions {
  /** Where {@code ferrite local}'s master serves metrics unless told otherwise. */
  static final int LOCAL_DEFAULT_PORT = 9100;

  @Option(
      names = "--metrics-port",
      paramLabel = "PORT",
      description =
          "Port of /metrics (metrics.port), for Prometheus: -1 off, 0 any free port."
              + " Default: off (ferrite local: 9100 or the next free one).")
  Integer port;

  @Option(
      names = "--metrics-host",
      paramLabel = "HOST",
      description =
          "Address of /metrics (metrics.host, default 127.0.0.1); off loopback a scrape must"
              + " carry the client secret.")
  String host;

  /** Puts the flags given into {@code flags}. */
  void apply(Map<String, String> flags) {
    ConfigOptions.put(flags, FerriteConfig.METRICS_PORT, port);
    ConfigOptions.put(flags, FerriteConfig.METRICS_HOST, host);
  }

  /**
   * The first port from {@code first} on that {@code host} can bind now (tried up to 100 ports),
   * for {@code ferrite local}'s "9100 or the next free one"; {@code first} itself if none is free,
   * so that the start fails naming it.
   */
  static int freePortFrom(String host, int first) {
    for (int p = first; p < first + 100 && p <= 65535; p++) {
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress(InetAddress.getByName(host), p));
        return p;
      } catch (IOException e) {
        // Taken: try the next one.
      }
    }
    return first;
  }
}
