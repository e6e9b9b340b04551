package io.ferrite.fabric.tcp;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A self-signed certificate and its key as PEM files, for {@code ferrite local} and {@code ferrite
 * tls generate}: {@code cert.pem} (also the file clients trust) and {@code key.pem} (PKCS#8, mode
 * 0600).
 *
 * <p>No extra dependency: the JDK's own {@code keytool} (of the running JVM, {@code
 * $java.home/bin/keytool}) makes the key pair and the self-signed certificate in a PKCS#12 store,
 * and the JDK's {@link KeyStore} reads them back out; PEM is base64 of the DER bytes between two
 * lines. The store and its one-time password live only as long as this call.
 */
public final class TlsFiles {
  private TlsFiles() {}

  /** The certificate a server presents and a client trusts. */
  public static final String CERT = "cert.pem";

  /** The certificate's private key (PKCS#8, unencrypted, owner-only). */
  public static final String KEY = "key.pem";

  /** The names the certificate is valid for when none are given: this host's loopback. */
  public static final List<String> LOOPBACK = List.of("ip:127.0.0.1", "dns:localhost");

  private static final long KEYTOOL_TIMEOUT_SECONDS = 60;

  /**
   * Writes {@code dir/cert.pem} and {@code dir/key.pem} for an EC P-256 key and a self-signed
   * certificate valid for {@code names} (subject alternative names in keytool's form, {@code
   * ip:10.0.0.5} or {@code dns:host}) and {@code days} days; replaces existing files.
   *
   * @return {@code dir/cert.pem}
   * @throws FerriteException {@link ErrorCode#INTERNAL} if keytool fails, with its output
   */
  public static Path generate(Path dir, List<String> names, int days) throws IOException {
    if (names.isEmpty() || days < 1) {
      throw new IllegalArgumentException(
          "names: " + names + ", days: " + days + " (expected: a name and >= 1 day)");
    }
    Files.createDirectories(dir);
    Path store = dir.resolve(".ferrite-tls-" + System.nanoTime() + ".p12");
    byte[] pw = new byte[18];
    new SecureRandom().nextBytes(pw);
    String password = HexFormat.of().formatHex(pw);
    try {
      keytool(store, password, names, days);
      KeyStore ks = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(store)) {
        ks.load(in, password.toCharArray());
      }
      Key key = ks.getKey("ferrite", password.toCharArray());
      Certificate[] chain = ks.getCertificateChain("ferrite");
      if (!(key instanceof PrivateKey) || chain == null || chain.length == 0) {
        throw new FerriteException(ErrorCode.INTERNAL, "keytool wrote no key pair to " + store);
      }
      StringBuilder certs = new StringBuilder();
      for (Certificate c : chain) {
        certs.append(pem("CERTIFICATE", c.getEncoded()));
      }
      Path keyFile = dir.resolve(KEY);
      Files.deleteIfExists(keyFile);
      // Created owner-only before a byte is written: the key is never readable by others.
      Files.createFile(
          keyFile,
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(
          keyFile,
          pem("PRIVATE KEY", key.getEncoded()),
          StandardCharsets.US_ASCII,
          StandardOpenOption.TRUNCATE_EXISTING);
      Path certFile = dir.resolve(CERT);
      Files.writeString(certFile, certs, StandardCharsets.US_ASCII);
      return certFile;
    } catch (GeneralSecurityException e) {
      throw new FerriteException(
          ErrorCode.INTERNAL, "cannot read the key pair keytool made: " + e, e);
    } finally {
      Files.deleteIfExists(store);
    }
  }

  private static void keytool(Path store, String password, List<String> names, int days)
      throws IOException {
    Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
    List<String> cmd = new ArrayList<>();
    cmd.addAll(
        List.of(
            keytool.toString(),
            "-genkeypair",
            "-alias",
            "ferrite",
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-sigalg",
            "SHA256withECDSA",
            "-dname",
            "CN=ferrite",
            "-ext",
            "SAN=" + String.join(",", names),
            "-validity",
            String.valueOf(days),
            "-storetype",
            "PKCS12",
            "-keystore",
            store.toString(),
            "-storepass:env",
            "FERRITE_KEYTOOL_PASSWORD"));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    // The password goes by environment, never on a command line others can list.
    pb.environment().put("FERRITE_KEYTOOL_PASSWORD", password);
    Process p = pb.start();
    byte[] out;
    try (InputStream in = p.getInputStream()) {
      out = in.readAllBytes();
    }
    try {
      if (!p.waitFor(KEYTOOL_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new FerriteException(ErrorCode.INTERNAL, keytool + " did not finish");
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new FerriteException(ErrorCode.INTERNAL, "interrupted waiting for " + keytool);
    }
    if (p.exitValue() != 0) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          keytool
              + " failed ("
              + p.exitValue()
              + "): "
              + new String(out, StandardCharsets.UTF_8).trim());
    }
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN "
        + type
        + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END "
        + type
        + "-----\n";
  }
}
