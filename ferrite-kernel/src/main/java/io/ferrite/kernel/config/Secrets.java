package io.ferrite.kernel.config;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * The cluster secret on disk: 32 random bytes, hex, in a file readable by its owner only, inside a
 * directory that only its owner may enter.
 */
public final class Secrets {
  private static final System.Logger LOG = System.getLogger(Secrets.class.getName());

  /** Bytes of a generated secret (the handshake needs at least 16). */
  public static final int SECRET_BYTES = 32;

  private Secrets() {}

  /** Reads the hex secret in {@code file}; warns if others may read the file. */
  public static byte[] read(Path file) {
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
      return HexFormat.of().parseHex(hex);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read the cluster secret file " + file + ": " + e, e);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("cluster secret file " + file + " does not hold hex", e);
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
