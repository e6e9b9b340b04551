package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.netty.Tls;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * Which cluster a client command talks to, and with what secret. Resolution order: flags, then
 * {@code FERRITE_CLUSTER} / {@code FERRITE_CLUSTER_SECRET_FILE} / {@code FERRITE_CLUSTER_ID}, then
 * the cluster file ({@code --cluster-file}, default {@code ~/.ferrite/cluster}, written by {@code
 * ferrite local}).
 */
final class ClusterTarget {
  @Option(
      names = "--cluster",
      paramLabel = "URI",
      description =
          "Master URI, ferrite://host:port (default: $FERRITE_CLUSTER, then the cluster file).")
  String uri;

  @Option(
      names = "--secret-file",
      description =
          "Cluster secret file (default: $FERRITE_CLUSTER_SECRET_FILE, then the cluster file).")
  Path secretFile;

  @Option(names = "--cluster-id", description = "Cluster id (default: the cluster file's).")
  String clusterId;

  @Option(
      names = "--cluster-file",
      description = "Cluster file to read (default: ~/.ferrite/cluster).")
  Path clusterFile;

  @Option(
      names = "--tls-trust",
      paramLabel = "PEM",
      description =
          "Connect over TLS, trusting these certificates (default: $FERRITE_TLS_TRUST, then the"
              + " cluster file's tls.trust; none: no TLS).")
  Path tlsTrust;

  /** The resolved target; {@code tls} is null when the cluster does not run TLS. */
  record Resolved(String uri, Credentials credentials, Tls tls) {}

  Resolved resolve() {
    return resolve(System.getenv());
  }

  Resolved resolve(Map<String, String> env) {
    Path cfPath = clusterFile != null ? clusterFile : ClusterFile.defaultLocation();
    ClusterFile cf = Files.exists(cfPath) ? ClusterFile.read(cfPath) : null;
    String u = first(uri, env.get("FERRITE_CLUSTER"), cf == null ? null : cf.uri());
    if (u == null) {
      throw new IllegalArgumentException(
          "no cluster given: pass --cluster ferrite://host:port, set FERRITE_CLUSTER, or start"
              + " 'ferrite local' (it writes "
              + cfPath
              + ")");
    }
    String secret =
        first(
            secretFile == null ? null : secretFile.toString(),
            env.get(FerriteConfig.envName(FerriteConfig.SECRET_FILE)),
            cf == null ? null : cf.secretFile().toString());
    if (secret == null) {
      throw new IllegalArgumentException(
          "no cluster secret: pass --secret-file or set "
              + FerriteConfig.envName(FerriteConfig.SECRET_FILE));
    }
    String id =
        first(
            clusterId,
            env.get(FerriteConfig.envName(FerriteConfig.CLUSTER_ID)),
            cf == null ? null : cf.clusterId(),
            "ferrite");
    String trust =
        first(
            tlsTrust == null ? null : tlsTrust.toString(),
            env.get(FerriteConfig.envName(FerriteConfig.TLS_TRUST)),
            cf == null || cf.tlsTrust() == null ? null : cf.tlsTrust().toString());
    Tls tls = trust == null ? null : Tls.fromPem(null, null, Path.of(trust));
    return new Resolved(u, new Credentials(id, Secrets.read(Path.of(secret))), tls);
  }

  private static String first(String... values) {
    for (String v : values) {
      if (v != null && !v.isBlank()) {
        return v;
      }
    }
    return null;
  }
}
