package io.ferrite.kernel.config;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * A cluster's directory on tmpfs ({@code shm.dir}, {@code /dev/shm} by default), where memory
 * servers keep their dram region files and the shm fabric its sockets and ring files: whoever can
 * write there can replace a region file or a socket, and with them read or feed what a server
 * serves.
 *
 * <p>In a directory others may write (the default {@code /dev/shm}, mode 1777), anyone could create
 * {@code ferrite-<cluster.id>} first, or a symlink by that name. So there the cluster's directory
 * is {@code ferrite-<cluster.id>-<random>}, created with mode 0700 by {@code mkdir} (which fails
 * rather than reuse what exists), and its path is recorded in {@code <data.dir>/shm-dir} (a private
 * directory) where the cluster's other processes on this host find it. In a private {@code shm.dir}
 * (an operator's or a test's own directory) the name stays {@code ferrite-<cluster.id>}.
 *
 * <p>Either way, every directory from the cluster's down that exists already is checked before it
 * is used: a real directory (never a symlink: no link is followed), owned by this process's user,
 * and writable by no one else; otherwise the process refuses to start, saying why and what to do.
 */
public final class ShmDirectory {
  private static final System.Logger LOG = System.getLogger(ShmDirectory.class.getName());

  /** The file in {@code data.dir} that records the cluster's shm directory. */
  public static final String RECORD = "shm-dir";

  private ShmDirectory() {}

  /** The cluster's directory for {@code cfg}, created or checked (see the class comment). */
  public static Path cluster(FerriteConfig cfg) {
    return cluster(cfg.shmDir(), cfg.clusterId(), cfg.dataDir());
  }

  /**
   * {@code sub} (a relative path, e.g. a server's name) in the cluster's directory for {@code cfg},
   * created with mode 0700 or checked, level by level.
   */
  public static Path cluster(FerriteConfig cfg, String sub) {
    return privateDirectories(cluster(cfg), Path.of(sub));
  }

  static Path cluster(Path shmRoot, String clusterId, Path dataDir) {
    Path root = shmRoot.toAbsolutePath();
    String name = "ferrite-" + clusterId;
    try {
      Files.createDirectories(root);
      if (!sharedWithOthers(root)) {
        return privateDirectories(root, Path.of(name));
      }
      Path record = Secrets.createPrivateDirectories(dataDir).resolve(RECORD);
      Path dir = recorded(record, root, name);
      if (dir == null) {
        dir = publish(record, root.resolve(name + "-" + suffix()));
        dir = dir == null ? recorded(record, root, name) : dir;
      }
      if (dir == null) {
        throw new FerriteException(
            ErrorCode.INTERNAL, "cannot read the cluster's shm directory from " + record);
      }
      mkdirOrCheck(dir);
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the cluster's shm directory under " + root, e);
    }
  }

  /** Whether others than the owner may create entries in {@code dir} (as in {@code /dev/shm}). */
  private static boolean sharedWithOthers(Path dir) throws IOException {
    Set<PosixFilePermission> p = Files.getPosixFilePermissions(dir);
    return p.contains(PosixFilePermission.GROUP_WRITE)
        || p.contains(PosixFilePermission.OTHERS_WRITE);
  }

  private static String suffix() {
    byte[] b = new byte[8];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * The directory {@code record} names, or null if there is no record. A record naming something
   * other than a {@code <name>-<suffix>} entry of {@code root} is refused: it would be someone
   * else's choice.
   */
  private static Path recorded(Path record, Path root, String name) throws IOException {
    String s;
    try {
      s = Files.readString(record, StandardCharsets.UTF_8).trim();
    } catch (NoSuchFileException e) {
      return null;
    }
    Path dir = Path.of(s);
    if (!root.equals(dir.getParent()) || !dir.getFileName().toString().startsWith(name + "-")) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          record
              + " names "
              + s
              + " (expected: a directory "
              + name
              + "-<suffix> in "
              + root
              + "); delete "
              + record
              + " if shm.dir or cluster.id changed");
    }
    return dir;
  }

  /**
   * Records {@code dir} in {@code record} unless another process did first ({@code link(2)} fails
   * if the record exists: one of two processes starting together wins). Returns {@code dir}, or
   * null if another record won.
   */
  private static Path publish(Path record, Path dir) throws IOException {
    Path tmp = Files.createTempFile(record.getParent(), RECORD + "-", ".tmp");
    try {
      Files.writeString(tmp, dir + "\n", StandardCharsets.UTF_8);
      Files.createLink(record, tmp);
      return dir;
    } catch (FileAlreadyExistsException e) {
      return null;
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * Creates {@code base/sub}, level by level, each missing directory with mode 0700 by {@code
   * mkdir}, each existing one {@link #check}ed; {@code base} itself is checked too.
   */
  public static Path privateDirectories(Path base, Path sub) {
    Path dir = base.toAbsolutePath();
    try {
      check(dir);
      for (Path part : sub) {
        dir = dir.resolve(part.toString());
        mkdirOrCheck(dir);
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dir, e);
    }
  }

  private static void mkdirOrCheck(Path dir) throws IOException {
    try {
      Files.createDirectory(
          dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (FileAlreadyExistsException e) {
      check(dir);
    }
  }

  /**
   * Refuses {@code dir} unless it is a directory (not a symlink to one), owned by this process's
   * user, that neither group nor others may write.
   *
   * @throws FerriteException INVALID_ARGUMENT saying what is wrong and what to do
   */
  public static void check(Path dir) throws IOException {
    PosixFileAttributes a =
        Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (a.isSymbolicLink() || !a.isDirectory()) {
      throw refuse(
          dir,
          (a.isSymbolicLink() ? "is a symbolic link" : "is not a directory")
              + " (a name someone else may have planted)",
          "remove it, or set shm.dir to a private directory");
    }
    int owner = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    int me = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    if (owner != me) {
      throw refuse(
          dir,
          "is owned by user " + a.owner().getName() + " (uid " + owner + "), not by uid " + me,
          "remove it as its owner, or set shm.dir or cluster.id to use another directory");
    }
    Set<PosixFilePermission> p = a.permissions();
    if (p.contains(PosixFilePermission.GROUP_WRITE)
        || p.contains(PosixFilePermission.OTHERS_WRITE)) {
      throw refuse(
          dir,
          "is writable by group or others (mode " + PosixFilePermissions.toString(p) + ")",
          "chmod 700 it if nobody else wrote there, else remove it");
    }
    if (p.contains(PosixFilePermission.GROUP_READ) || p.contains(PosixFilePermission.OTHERS_READ)) {
      LOG.log(
          System.Logger.Level.WARNING,
          "shm directory {0} is readable by others ({1}); chmod 700 it",
          dir,
          PosixFilePermissions.toString(p));
    }
  }

  private static FerriteException refuse(Path dir, String why, String what) {
    return new FerriteException(
        ErrorCode.INVALID_ARGUMENT,
        "refusing the shm directory "
            + dir
            + ": it "
            + why
            + "; whoever can write there can replace region files and sockets. To fix: "
            + what
            + ".");
  }
}
