package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.netty.Tls;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.ClusterLocator;
import io.ferrite.kernel.config.FerriteConfig;
import java.nio.file.Path;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * Which cluster a client command talks to, and with what secret: the flags, resolved as every
 * client resolves its settings ({@link ClusterLocator}: then {@code FERRITE_CLUSTER} / {@code
 * FERRITE_CLUSTER_SECRET_FILE} / {@code FERRITE_CLUSTER_ID} / {@code FERRITE_TLS_TRUST}, then the
 * cluster file, {@code --cluster-file}, default {@code ~/.ferrite/cluster}, written by {@code
 * ferrite local}).
 *
 * <p>Which secret: a {@code --secret-file} given on the command line is used as it is, root or
 * {@code client.secret} (its role is the file's). Otherwise the configured file is the root {@code
 * secret}; a data command ({@link Role#CLIENT}) takes the {@code client.secret} beside it when
 * there is one, so that it runs with the least role that can do its job, and only the operator's
 * commands (kv drop, rebalance, compact-log) use the root.
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
          "Cluster secret file: the root 'secret' or a 'client.secret' (default:"
              + " $FERRITE_CLUSTER_SECRET_FILE, then the cluster file's; data commands take the"
              + " client.secret beside a default root file).")
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

  /**
   * The resolved target; {@code tls} is null when the cluster does not run TLS; {@code config} is
   * the environment's ({@code FERRITE_*}: client-side keys such as fabric switches and the faces'
   * client keys).
   */
  record Resolved(String uri, Credentials credentials, Tls tls, FerriteConfig config) {}

  /** For a data command: the least role, CLIENT, when the secret file was not given. */
  Resolved resolve() {
    return resolve(Role.CLIENT);
  }

  /** For a command that needs {@code role}: CLIENT for data, ADMIN for the operator's. */
  Resolved resolve(Role role) {
    return resolve(System.getenv(), role);
  }

  /** What a client command does with its connection; may throw {@code E}. */
  @FunctionalInterface
  interface WithClient<T, E extends Exception> {
    T apply(FerriteClient client) throws E;
  }

  /**
   * As {@link WithClient}, for a command that also reaches the cluster around the client (status
   * asks each master of a group its role): the resolved target and the client's fabrics, both valid
   * until it returns.
   */
  @FunctionalInterface
  interface WithConnection<T, E extends Exception> {
    T apply(FerriteClient client, Resolved target, Fabrics fabrics) throws E;
  }

  /**
   * Connects to the resolved cluster with the secret of {@code role} (see {@link #resolve(Role)})
   * over the client fabrics ({@link Fabrics}), runs {@code body}, then closes the client and the
   * fabrics, also when {@code body} throws. {@code session}: false for a command that allocates
   * nothing ({@link ClientOptions#session()}: no session, no allocation), as kv's and tree's do
   * (their shards and meganodes are the servers'); fs and graph allocate memory, so keep one.
   */
  <T, E extends Exception> T withClient(
      Role role, String clientName, boolean session, WithClient<T, E> body) throws E {
    return withClient(role, clientName, session, (c, t, fabrics) -> body.apply(c));
  }

  /** As {@link #withClient(Role, String, boolean, WithClient)}, the body given more. */
  <T, E extends Exception> T withClient(
      Role role, String clientName, boolean session, WithConnection<T, E> body) throws E {
    Resolved t = resolve(role);
    Fabrics fabrics = new Fabrics(t);
    try (FerriteClient c =
        Ferrite.connect(
            t.uri(),
            ClientOptions.builder(t.credentials())
                .config(t.config())
                .fabrics(fabrics.factory())
                .session(session)
                .clientName(clientName)
                .build())) {
      return body.apply(c, t, fabrics);
    } finally {
      fabrics.close();
    }
  }

  Resolved resolve(Map<String, String> env) {
    return resolve(env, Role.CLIENT);
  }

  Resolved resolve(Map<String, String> env, Role role) {
    ClusterLocator.Location l =
        ClusterLocator.locate(
            new ClusterLocator.Given(
                uri,
                clusterId,
                secretFile,
                clusterFile,
                tlsTrust,
                "--cluster",
                "--secret-file",
                "--cluster-file"),
            env);
    return new Resolved(
        l.master(), l.credentials(role), l.tls(), FerriteConfig.load(null, env, Map.of()));
  }
}
