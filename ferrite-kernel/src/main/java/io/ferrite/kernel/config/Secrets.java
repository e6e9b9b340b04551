package io.ferrite.kernel.config;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Set;

/**
 * The cluster secrets on disk, each in a file readable by its owner only, inside a directory that
 * only its owner may enter.
 *
 * <ul>
 *   <li>{@code secret}: the root (role ADMIN), 32 random bytes as hex. Masters and memory servers
 *       need it; the operator's commands use it.
 *   <li>{@code client.secret}, beside it: {@code client:} and the hex of the CLIENT secret, {@code
 *       HMAC-SHA256(root, "ferrite-role-client")} ({@link Role}). Enough for every data op of every
 *       face, and nothing can be derived from it. Hand this one to applications.
 * </ul>
 *
 * {@link #load} reads either and returns credentials of the role the file holds.
 */
public final class Secrets {
  private static final System.Logger LOG = System.getLogger(Secrets.class.getName());

  /** Bytes of a generated secret (the handshake needs at least 16). */
  public static final int SECRET_BYTES = 32;

  private Secrets() {}

  /** The file name of the CLIENT secret, beside the root {@code secret}. */
  public static final String CLIENT_FILE = "client.secret";

  /** How a role secret's file begins: {@code client:} or {@code server:}, then the hex. */
  private static String prefix(Role r) {
    return r.name().toLowerCase(Locale.ROOT) + ":";
  }

  /**
   * The credentials in {@code file}, root or role secret ({@code client:hex}): the role is the
   * file's, and messages name the file (a wrong secret is reported as "the secret in FILE is not
   * this cluster's").
   */
  public static Credentials load(String clusterId, Path file) {
    String text = readText(file);
    Role role = Role.ADMIN;
    for (Role r : new Role[] {Role.CLIENT, Role.SERVER}) {
      if (text.startsWith(prefix(r))) {
        role = r;
        text = text.substring(prefix(r).length());
      }
    }
    return new Credentials(clusterId, parse(file, text), role, file.toString());
  }

  /** The root secret's hex in {@code file}; warns if others may read the file. */
  public static byte[] read(Path file) {
    String text = readText(file);
    for (Role r : new Role[] {Role.CLIENT, Role.SERVER}) {
      if (text.startsWith(prefix(r))) {
        throw new IllegalArgumentException(
            "the secret file "
                + file
                + " holds a "
                + r
                + " secret; this needs the cluster's root secret (the file named 'secret' that"
                + " 'ferrite local' or 'ferrite master' wrote)");
      }
    }
    return parse(file, text);
  }

  private static byte[] parse(Path file, String hex) {
    try {
      return HexFormat.of().parseHex(hex);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("cluster secret file " + file + " does not hold hex", e);
    }
  }

  /**
   * Writes the CLIENT secret derived from {@code root} to {@link #CLIENT_FILE} beside {@code
   * rootFile} (mode 0600), unless it already holds it; returns its path.
   */
  public static Path writeClientSecret(Path rootFile, byte[] root) {
    Path file = rootFile.toAbsolutePath().resolveSibling(CLIENT_FILE);
    Credentials client = new Credentials("any", root).as(Role.CLIENT);
    String text = prefix(Role.CLIENT) + HexFormat.of().formatHex(client.secret()) + "\n";
    try {
      if (Files.exists(file) && Files.readString(file, StandardCharsets.US_ASCII).equals(text)) {
        return file;
      }
      // A new file, moved into place: a reader never sees it half written or with a wide mode.
      // Its own name: a master and a server started together on one directory both write it (the
      // same text), and a shared temporary name let one move the other's file away.
      Path tmp =
          Files.createTempFile(
              file.getParent(),
              CLIENT_FILE + ".",
              ".tmp",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      try {
        Files.writeString(tmp, text, StandardCharsets.US_ASCII);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(tmp);
      }
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the client secret file " + file, e);
    }
  }

  private static String readText(Path file) {
    try {
      String hex = Files.readString(file, StandardCharsets.US_ASCII).trim();
      try {
        Set<PosixFilePermission> p = Files.getPosixFilePermissions(file);
        if (p.contains(PosixFilePermission.GROUP_READ)
            || p.contains(PosixFilePermission.OTHERS_READ)) {
          LOG.log(
              System.Logger.Level.WARNING,
              "secret file {0} is readable by others ({1}); chmod 600 it",
              file,
              PosixFilePermissions.toString(p));
        }
      } catch (UnsupportedOperationException e) {
        // Not a POSIX file system: nothing to check.
      }
      return hex;
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read the cluster secret file " + file + ": " + e, e);
    }
  }

  /** Reads {@code file}, or creates it with a fresh random secret if it does not exist. */
  public static byte[] readOrCreate(Path file) {
    if (Files.exists(file)) {
      return read(file);
    }
    byte[] secret = new byte[SECRET_BYTES];
    new SecureRandom().nextBytes(secret);
    try {
      Path dir = file.toAbsolutePath().getParent();
      createPrivateDirectories(dir);
      Files.writeString(
          Files.createFile(
              file,
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))),
          HexFormat.of().formatHex(secret) + "\n",
          StandardCharsets.US_ASCII);
      return secret;
    } catch (FileAlreadyExistsException e) {
      return read(file); // lost a race with another process creating it: use theirs
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the cluster secret file " + file, e);
    }
  }

  /** Creates {@code dir} and missing parents; the ones it creates get mode 0700. */
  public static Path createPrivateDirectories(Path dir) throws IOException {
    Path abs = dir.toAbsolutePath();
    if (Files.isDirectory(abs)) {
      return abs;
    }
    Path parent = abs.getParent();
    if (parent != null) {
      createPrivateDirectories(parent);
    }
    try {
      Files.createDirectory(
          abs, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (FileAlreadyExistsException e) {
      if (!Files.isDirectory(abs)) {
        throw e;
      }
    }
    return abs;
  }
}
