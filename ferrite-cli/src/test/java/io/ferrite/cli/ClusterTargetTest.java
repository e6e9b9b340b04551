package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.Secrets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which secret a CLI command uses (docs/SECURITY.md, "Secret files and which the CLI uses"). */
class ClusterTargetTest {
  @TempDir Path dir;

  @Test
  void dataCommandsPreferTheClientSecretAndAdminCommandsTheRoot() throws Exception {
    Path root = dir.resolve("secret");
    byte[] secret = Secrets.readOrCreate(root);
    Path clusterFile = dir.resolve("cluster");
    new ClusterFile("ferrite://127.0.0.1:1", "ct", root).write(clusterFile);
    ClusterTarget t = new ClusterTarget();
    t.clusterFile = clusterFile;

    // No client.secret yet: both use the root.
    assertEquals(Role.ADMIN, t.resolve(Map.of(), Role.CLIENT).credentials().role());

    Path client = Secrets.writeClientSecret(root, secret);
    assertEquals(dir.resolve(Secrets.CLIENT_FILE), client);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(client)));
    Credentials data = t.resolve(Map.of(), Role.CLIENT).credentials();
    assertEquals(Role.CLIENT, data.role());
    assertArrayEquals(new Credentials("ct", secret).secretFor(Role.CLIENT), data.secret());
    assertEquals(client.toString(), data.origin());
    Credentials admin = t.resolve(Map.of(), Role.ADMIN).credentials();
    assertEquals(Role.ADMIN, admin.role());
    assertArrayEquals(secret, admin.secret());

    // A --secret-file on the command line is used as given, whatever the command.
    t.secretFile = root;
    assertEquals(Role.ADMIN, t.resolve(Map.of(), Role.CLIENT).credentials().role());
    t.secretFile = client;
    assertEquals(Role.CLIENT, t.resolve(Map.of(), Role.ADMIN).credentials().role());
  }

  @Test
  void aClusterFilePathWhereTheUriGoesIsNamedAsSuch() throws Exception {
    Path clusterFile = dir.resolve("cluster");
    new ClusterFile("ferrite://127.0.0.1:1", "ct", dir.resolve("secret")).write(clusterFile);
    ClusterTarget t = new ClusterTarget();
    t.clusterFile = dir.resolve("absent");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> t.resolve(Map.of("FERRITE_CLUSTER", clusterFile.toString())));
    assertEquals(
        "FERRITE_CLUSTER '"
            + clusterFile
            + "' is not a master URI (expected: ferrite://host:port); it is a file: pass a cluster"
            + " file with --cluster-file "
            + clusterFile,
        e.getMessage());
    t.uri = "127.0.0.1:7100";
    e = assertThrows(IllegalArgumentException.class, () -> t.resolve(Map.of()));
    assertEquals(
        "--cluster '127.0.0.1:7100' is not a master URI (expected: ferrite://host:port)",
        e.getMessage());
  }

  @Test
  void clientCommandsTakeTheEnvironmentsConfiguration() throws Exception {
    Path root = dir.resolve("secret");
    Secrets.readOrCreate(root);
    Path clusterFile = dir.resolve("cluster");
    new ClusterFile("ferrite://127.0.0.1:1", "ct", root).write(clusterFile);
    ClusterTarget t = new ClusterTarget();
    t.clusterFile = clusterFile;
    assertEquals(16, t.resolve(Map.of()).config().fabricTuning().lanes());
    // FERRITE_NETTY_LANES=0 reaches the fabrics a kv, fs or status command opens.
    assertEquals(0, t.resolve(Map.of("FERRITE_NETTY_LANES", "0")).config().fabricTuning().lanes());
  }

  @Test
  void aServerGivenTheClientSecretIsToldWhichFileItNeeds() throws Exception {
    Path root = dir.resolve("secret");
    Path client = Secrets.writeClientSecret(root, Secrets.readOrCreate(root));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Secrets.read(client));
    assertTrue(e.getMessage().contains("holds a CLIENT secret"), e.getMessage());
    // Writing it again with the same root leaves the same file.
    String before = Files.readString(client);
    Secrets.writeClientSecret(root, Secrets.read(root));
    assertEquals(before, Files.readString(client));
  }
}
