package io.ferrite.kernel.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cluster's shm directory: created 0700, with a random suffix recorded in the data directory
 * when shm.dir is shared; an existing one that is a symlink, writable by others or owned by someone
 * else is refused with a message saying why and what to do.
 */
class ShmDirectoryTest {
  @TempDir Path tmp;

  private Path dir(String name, String mode) throws IOException {
    Path d = Files.createDirectory(tmp.resolve(name));
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString(mode));
    return d;
  }

  @Test
  void aPrivateShmDirKeepsTheNameAndCreatesOwnerOnlyDirectories() throws IOException {
    Path root = dir("shm", "rwx------");
    Path d = ShmDirectory.cluster(root, "c1", tmp.resolve("data"));
    assertEquals(root.resolve("ferrite-c1"), d);
    Path server = ShmDirectory.privateDirectories(d, Path.of("s1"));
    for (Path p : new Path[] {d, server}) {
      assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
    }
    assertEquals(d, ShmDirectory.cluster(root, "c1", tmp.resolve("data")), "reused as is");
  }

  @Test
  void aSharedShmDirGetsARandomSuffixRecordedInTheDataDirectory() throws IOException {
    Path root = dir("shm", "rwxrwxrwx"); // as /dev/shm: anyone may create a name there
    // Someone planted the predictable name first: it is not used.
    Path planted = Files.createDirectory(root.resolve("ferrite-c1"));
    Files.setPosixFilePermissions(planted, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path data = tmp.resolve("data");
    Path d = ShmDirectory.cluster(root, "c1", data);
    assertEquals(root, d.getParent());
    assertTrue(d.getFileName().toString().matches("ferrite-c1-[0-9a-f]{16}"), d.toString());
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(d)));
    assertEquals(
        d.toString(),
        Files.readString(data.resolve(ShmDirectory.RECORD), StandardCharsets.UTF_8).trim());
    assertEquals(d, ShmDirectory.cluster(root, "c1", data), "the cluster's other processes");
    Files.delete(d); // a reboot empties tmpfs: the recorded name is made again
    assertEquals(d, ShmDirectory.cluster(root, "c1", data));
    assertNotEquals(d, ShmDirectory.cluster(root, "c1", tmp.resolve("other-data")));
  }

  @Test
  void aDirectoryWritableByOthersIsRefused() throws IOException {
    Path root = dir("shm", "rwx------");
    Path d = Files.createDirectory(root.resolve("ferrite-c1"));
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxrwxrwx"));
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> ShmDirectory.cluster(root, "c1", tmp.resolve("data")));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("writable by group or others"), e.getMessage());
    assertTrue(e.getMessage().contains("chmod 700"), e.getMessage());
    // One level down too (a server's directory).
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwx------"));
    Path s = Files.createDirectory(d.resolve("s1"));
    Files.setPosixFilePermissions(s, PosixFilePermissions.fromString("rwxrwx---"));
    e =
        assertThrows(
            FerriteException.class, () -> ShmDirectory.privateDirectories(d, Path.of("s1")));
    assertTrue(e.getMessage().contains(s.toString()), e.getMessage());
  }

  @Test
  void aSymlinkIsRefusedNotFollowed() throws IOException {
    Path root = dir("shm", "rwx------");
    Path elsewhere = dir("elsewhere", "rwx------");
    Files.createSymbolicLink(root.resolve("ferrite-c1"), elsewhere);
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> ShmDirectory.cluster(root, "c1", tmp.resolve("data")));
    assertTrue(e.getMessage().contains("is a symbolic link"), e.getMessage());
    assertTrue(Files.isSymbolicLink(root.resolve("ferrite-c1")));
    try (var s = Files.list(elsewhere)) {
      assertEquals(0, s.count(), "nothing made through the link");
    }
  }

  @Test
  void aDirectoryOwnedByAnotherUserIsRefused() throws IOException {
    Path root = dir("shm", "rwx------");
    Path d = Files.createDirectory(root.resolve("ferrite-c1"));
    Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwx------"));
    UserPrincipal nobody;
    try {
      nobody = tmp.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
      Files.setOwner(d, nobody);
    } catch (IOException | UnsupportedOperationException e) {
      Assumptions.abort("cannot give a directory to another user here (not root): " + e);
      return;
    }
    assertEquals(nobody, Files.getOwner(d, LinkOption.NOFOLLOW_LINKS));
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> ShmDirectory.cluster(root, "c1", tmp.resolve("data")));
    assertTrue(e.getMessage().contains("is owned by user nobody"), e.getMessage());
  }
}
