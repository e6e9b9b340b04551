package io.ferrite.kernel.config;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Properties;

/**
 * How a client finds a cluster with no flags: a small properties file with the master's URI, the
 * cluster id and the path of the secret file. {@code ferrite local} writes one into its directory
 * and into {@link #defaultLocation()}; client commands read it when no cluster is given.
 *
 * <pre>
 * uri=ferrite://127.0.0.1:7100
 * cluster.id=ferrite
 * cluster.secret.file=/home/me/.ferrite/local/secret
 * </pre>
 *
 * @param uri the master, {@code ferrite://host:port}
 * @param clusterId the cluster id
 * @param secretFile the secret file
 * @param tlsTrust the certificates to trust when the cluster runs TLS on tcp ({@code tls.trust});
 *     null when it does not
 */
public record ClusterFile(String uri, String clusterId, Path secretFile, Path tlsTrust) {
  public static final String FILE_NAME = "cluster";

  /** A cluster without TLS. */
  public ClusterFile(String uri, String clusterId, Path secretFile) {
    this(uri, clusterId, secretFile, null);
  }

  /** {@code ~/.ferrite/cluster}. */
  public static Path defaultLocation() {
    return Path.of(System.getProperty("user.home", "."), ".ferrite", FILE_NAME);
  }

  public static ClusterFile read(Path file) {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read cluster file " + file + ": " + e, e);
    }
    String uri = p.getProperty("uri");
    String secret = p.getProperty(FerriteConfig.SECRET_FILE);
    if (uri == null || secret == null) {
      throw new IllegalArgumentException(
          "cluster file " + file + " lacks uri or " + FerriteConfig.SECRET_FILE);
    }
    String trust = p.getProperty(FerriteConfig.TLS_TRUST);
    return new ClusterFile(
        uri,
        p.getProperty(FerriteConfig.CLUSTER_ID, "ferrite"),
        Path.of(secret),
        trust == null || trust.isBlank() ? null : Path.of(trust));
  }

  /** Writes atomically (temp file + rename), so a reader never sees half a file. */
  public void write(Path file) {
    Properties p = new Properties();
    p.setProperty("uri", uri);
    p.setProperty(FerriteConfig.CLUSTER_ID, clusterId);
    p.setProperty(FerriteConfig.SECRET_FILE, secretFile.toAbsolutePath().toString());
    if (tlsTrust != null) {
      p.setProperty(FerriteConfig.TLS_TRUST, tlsTrust.toAbsolutePath().toString());
    }
    try {
      Path dir = Secrets.createPrivateDirectories(file.toAbsolutePath().getParent());
      Path tmp = Files.createTempFile(dir, FILE_NAME, ".tmp");
      try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
        p.store(w, "Ferrite cluster: written by ferrite local/master");
      }
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write cluster file " + file, e);
    }
  }
}
