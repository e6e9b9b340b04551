package io.ferrite.kernel.config;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.netty.Tls;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * How every client finds its cluster — the CLI, Spark, Hadoop, YCSB — one order for all: what the
 * caller was given explicitly (a flag, a Spark or Hadoop key, a YCSB property), then the
 * environment ({@code FERRITE_CLUSTER}, {@code FERRITE_CLUSTER_SECRET_FILE}, {@code
 * FERRITE_CLUSTER_ID}, {@code FERRITE_TLS_TRUST}), then the cluster file ({@link ClusterFile}, by
 * default {@code ~/.ferrite/cluster}, which {@code ferrite local} writes), then the cluster id
 * {@code ferrite}. The cluster file is read only when a setting falls through to it.
 *
 * <p>Which secret (docs/SECURITY.md): a file given explicitly is used as it is, root or {@code
 * client.secret} (its role is the file's). A configured one (environment or cluster file) is the
 * root {@code secret}; for {@link Role#CLIENT} the {@code client.secret} beside it is taken when
 * there is one, so a data client runs with the least role that does its job.
 *
 * <p>Errors are {@link IllegalArgumentException}s naming the caller's own settings ({@link Given}'s
 * knob names), so a Spark user reads Spark keys and a shell user flags.
 */
public final class ClusterLocator {
  /** The environment variable of the master's URI. */
  public static final String CLUSTER_ENV = "FERRITE_CLUSTER";

  private ClusterLocator() {}

  /**
   * What a client was given explicitly (each null when not) and the names its user knows those
   * settings by, for messages.
   *
   * @param master the master's URI, {@code ferrite://host:port}
   * @param clusterId the cluster id
   * @param secretFile the secret file, used as it is
   * @param clusterFile the cluster file to fall back to (null: {@link
   *     ClusterFile#defaultLocation()})
   * @param tlsTrust the certificates to trust on tcp
   * @param masterKnob how the user sets the master (e.g. {@code --cluster}, {@code
   *     spark.ferrite.cluster})
   * @param secretKnob how the user sets the secret file
   * @param clusterFileKnob how the user names another cluster file
   */
  public record Given(
      String master,
      String clusterId,
      Path secretFile,
      Path clusterFile,
      Path tlsTrust,
      String masterKnob,
      String secretKnob,
      String clusterFileKnob) {}

  /**
   * Where the cluster is and how to prove membership.
   *
   * @param master the master's URI
   * @param clusterId the cluster id
   * @param secretFile the configured secret file (see {@link #credentials(Role)}); null when none
   *     is set anywhere (a caller may hold the secret some other way)
   * @param secretGiven whether {@code secretFile} was given explicitly (then used as it is)
   * @param tlsTrust the certificates to trust on tcp; null: the cluster runs no TLS
   * @param noSecret what to set when {@code secretFile} is null, for the error
   */
  public record Location(
      String master,
      String clusterId,
      Path secretFile,
      boolean secretGiven,
      Path tlsTrust,
      String noSecret) {

    /**
     * The secret file a client of {@code role} proves: see {@link ClusterLocator}.
     *
     * @throws IllegalArgumentException none is set anywhere, saying where to set one
     */
    public Path secretFile(Role role) {
      if (secretFile == null) {
        throw new IllegalArgumentException(noSecret);
      }
      if (!secretGiven && role == Role.CLIENT) {
        Path client = secretFile.toAbsolutePath().resolveSibling(Secrets.CLIENT_FILE);
        if (Files.isReadable(client)) {
          return client;
        }
      }
      return secretFile;
    }

    /** The credentials of {@link #secretFile(Role)}. */
    public Credentials credentials(Role role) {
      return Secrets.load(clusterId, secretFile(role));
    }

    /** TLS trusting {@link #tlsTrust()}, or null when the cluster runs none. */
    public Tls tls() {
      return tlsTrust == null ? null : Tls.fromPem(null, null, tlsTrust);
    }

    /** A client's fabrics: {@code cfg}'s tuning, and TLS on tcp as {@link #tls()} says. */
    public FabricFactory fabrics(FerriteConfig cfg) {
      return FabricFactory.client(cfg, tls());
    }
  }

  /**
   * Resolves {@code given}, then {@code env} (the process environment; tests pass their own), then
   * the cluster file.
   *
   * @throws IllegalArgumentException no master anywhere, a master that is not a URI, or an
   *     unreadable cluster file; the message names the settings that would fix it (no secret
   *     anywhere fails later, in {@link Location#credentials(Role)})
   */
  public static Location locate(Given given, Map<String, String> env) {
    Path cfPath = given.clusterFile() != null ? given.clusterFile() : ClusterFile.defaultLocation();
    Lazy cf = new Lazy(cfPath);
    String fromEnv = first(env.get(CLUSTER_ENV));
    String master = first(given.master(), fromEnv);
    String masterFrom = given.master() != null ? given.masterKnob() : CLUSTER_ENV;
    if (master == null && cf.get() != null) {
      master = cf.get().uri();
      masterFrom = "the cluster file " + cfPath;
    }
    if (master == null) {
      throw new IllegalArgumentException(
          "no cluster given: set "
              + given.masterKnob()
              + " or "
              + CLUSTER_ENV
              + " (ferrite://host:port), or start 'ferrite local' (it writes the cluster file "
              + cfPath
              + "; "
              + given.clusterFileKnob()
              + " names another)");
    }
    if (!master.contains("://")) {
      // A cluster file's path where a URI goes (FERRITE_CLUSTER=~/.ferrite/cluster) would
      // otherwise fail later, asking for a secret the file holds.
      throw new IllegalArgumentException(
          masterFrom
              + " '"
              + master
              + "' is not a master URI (expected: ferrite://host:port)"
              + (Files.isRegularFile(Path.of(master))
                  ? "; it is a file: pass a cluster file with "
                      + given.clusterFileKnob()
                      + " "
                      + master
                  : ""));
    }
    Path secret = given.secretFile();
    boolean secretGiven = secret != null;
    if (secret == null) {
      String s = first(env.get(FerriteConfig.envName(FerriteConfig.SECRET_FILE)));
      secret = s != null ? Path.of(s) : cf.get() != null ? cf.get().secretFile() : null;
    }
    String noSecret =
        "no cluster secret: set "
            + given.secretKnob()
            + " or "
            + FerriteConfig.envName(FerriteConfig.SECRET_FILE)
            + ", or give a cluster file as 'ferrite local' writes ("
            + given.clusterFileKnob()
            + "; none at "
            + cfPath
            + ")";
    String id = first(given.clusterId(), env.get(FerriteConfig.envName(FerriteConfig.CLUSTER_ID)));
    if (id == null) {
      id = cf.get() != null ? cf.get().clusterId() : "ferrite";
    }
    Path trust = given.tlsTrust();
    if (trust == null) {
      String t = first(env.get(FerriteConfig.envName(FerriteConfig.TLS_TRUST)));
      trust = t != null ? Path.of(t) : cf.get() != null ? cf.get().tlsTrust() : null;
    }
    return new Location(master, id, secret, secretGiven, trust, noSecret);
  }

  /** The first of {@code values} that is set (not null, not blank), trimmed; else null. */
  public static String first(String... values) {
    for (String v : values) {
      if (v != null && !v.isBlank()) {
        return v.trim();
      }
    }
    return null;
  }

  /** The cluster file, read at most once and only when a setting falls through to it. */
  private static final class Lazy {
    private final Path path;
    private ClusterFile file;
    private boolean read;

    Lazy(Path path) {
      this.path = path;
    }

    ClusterFile get() {
      if (!read) {
        read = true;
        if (Files.exists(path)) {
          file = ClusterFile.read(path);
        }
      }
      return file;
    }
  }
}
