package io.ferrite.kernel.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Role;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one order every client finds its cluster in: explicit settings, then the environment, then
 * the cluster file (read only when a setting falls through to it), then the id {@code ferrite};
 * which secret file a role proves; errors that name the caller's own settings.
 */
class ClusterLocatorTest {
  @TempDir Path dir;
  Path root;
  Path client;
  Path otherRoot;
  Path clusterFile;

  @BeforeEach
  void files() {
    root = dir.resolve("a/secret");
    Secrets.writeClientSecret(root, Secrets.readOrCreate(root));
    client = root.resolveSibling(Secrets.CLIENT_FILE);
    otherRoot = dir.resolve("b/secret");
    Secrets.readOrCreate(otherRoot);
    clusterFile = dir.resolve("cluster");
    new ClusterFile("ferrite://file:1", "file-id", root, dir.resolve("file.pem"))
        .write(clusterFile);
  }

  static ClusterLocator.Given given(
      String master, String id, Path secret, Path clusterFile, Path trust) {
    return new ClusterLocator.Given(
        master, id, secret, clusterFile, trust, "--cluster", "--secret-file", "--cluster-file");
  }

  @Test
  void explicitThenEnvironmentThenClusterFileThenDefaults() {
    ClusterLocator.Location fromFile =
        ClusterLocator.locate(given(null, null, null, clusterFile, null), Map.of());
    assertEquals("ferrite://file:1", fromFile.master());
    assertEquals("file-id", fromFile.clusterId());
    assertEquals(root, fromFile.secretFile());
    assertEquals(dir.resolve("file.pem").toAbsolutePath(), fromFile.tlsTrust());

    Map<String, String> env =
        Map.of(
            "FERRITE_CLUSTER", "ferrite://env:2",
            "FERRITE_CLUSTER_ID", "env-id",
            "FERRITE_CLUSTER_SECRET_FILE", otherRoot.toString(),
            "FERRITE_TLS_TRUST", "/env.pem");
    ClusterLocator.Location fromEnv =
        ClusterLocator.locate(given(null, null, null, clusterFile, null), env);
    assertEquals("ferrite://env:2", fromEnv.master());
    assertEquals("env-id", fromEnv.clusterId());
    assertEquals(otherRoot, fromEnv.secretFile());
    assertEquals(Path.of("/env.pem"), fromEnv.tlsTrust());

    ClusterLocator.Location explicit =
        ClusterLocator.locate(
            given("ferrite://flag:3", "flag-id", client, clusterFile, Path.of("/flag.pem")), env);
    assertEquals("ferrite://flag:3", explicit.master());
    assertEquals("flag-id", explicit.clusterId());
    assertEquals(client, explicit.secretFile());
    assertEquals(Path.of("/flag.pem"), explicit.tlsTrust());

    ClusterLocator.Location bare =
        ClusterLocator.locate(
            given("ferrite://flag:3", null, otherRoot, dir.resolve("none"), null), Map.of());
    assertEquals("ferrite", bare.clusterId(), "no id anywhere");
    assertNull(bare.tlsTrust(), "no trust anywhere: no TLS");
    assertNull(bare.tls());
  }

  @Test
  void aConfiguredRootGivesADataClientItsClientSecretAndAGivenFileIsUsedAsItIs() {
    ClusterLocator.Location configured =
        ClusterLocator.locate(given(null, null, null, clusterFile, null), Map.of());
    assertEquals(client, configured.secretFile(Role.CLIENT));
    assertEquals(Role.CLIENT, configured.credentials(Role.CLIENT).role());
    assertEquals(root, configured.secretFile(Role.ADMIN));
    assertEquals(Role.ADMIN, configured.credentials(Role.ADMIN).role());

    ClusterLocator.Location viaEnv =
        ClusterLocator.locate(
            given(null, null, null, clusterFile, null),
            Map.of("FERRITE_CLUSTER_SECRET_FILE", root.toString()));
    assertEquals(client, viaEnv.secretFile(Role.CLIENT), "a root from the environment too");

    ClusterLocator.Location rootWithoutClient =
        ClusterLocator.locate(
            given(null, null, null, clusterFile, null),
            Map.of("FERRITE_CLUSTER_SECRET_FILE", otherRoot.toString()));
    assertEquals(otherRoot, rootWithoutClient.secretFile(Role.CLIENT), "no client.secret beside");

    ClusterLocator.Location givenRoot =
        ClusterLocator.locate(given(null, null, root, clusterFile, null), Map.of());
    assertEquals(root, givenRoot.secretFile(Role.CLIENT), "given explicitly: as it is");
    assertEquals(Role.ADMIN, givenRoot.credentials(Role.CLIENT).role());
  }

  @Test
  void errorsNameTheCallersOwnSettings() throws Exception {
    Path none = dir.resolve("none");
    IllegalArgumentException noMaster =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ClusterLocator.locate(
                    new ClusterLocator.Given(
                        null,
                        null,
                        null,
                        none,
                        null,
                        "spark.ferrite.cluster",
                        "spark.ferrite.secret.file",
                        "spark.ferrite.cluster.file"),
                    Map.of()));
    assertTrue(noMaster.getMessage().startsWith("no cluster given: set spark.ferrite.cluster or"));
    assertTrue(noMaster.getMessage().contains("FERRITE_CLUSTER"), noMaster.getMessage());
    assertTrue(noMaster.getMessage().contains(none.toString()), noMaster.getMessage());
    assertTrue(
        noMaster.getMessage().contains("spark.ferrite.cluster.file names another"),
        noMaster.getMessage());

    IllegalArgumentException notUri =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ClusterLocator.locate(
                    given(null, null, null, none, null),
                    Map.of("FERRITE_CLUSTER", clusterFile.toString())));
    assertEquals(
        "FERRITE_CLUSTER '"
            + clusterFile
            + "' is not a master URI (expected: ferrite://host:port); it is a file: pass a cluster"
            + " file with --cluster-file "
            + clusterFile,
        notUri.getMessage());

    // No secret anywhere: found out only when a secret is needed, naming where to set one.
    ClusterLocator.Location noSecret =
        ClusterLocator.locate(given("ferrite://h:1", null, null, none, null), Map.of());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> noSecret.credentials(Role.CLIENT));
    assertTrue(
        e.getMessage().startsWith("no cluster secret: set --secret-file or"), e.getMessage());
    assertTrue(e.getMessage().contains("FERRITE_CLUSTER_SECRET_FILE"), e.getMessage());
  }

  @Test
  void theClusterFileIsReadOnlyWhenASettingFallsThroughToIt() throws Exception {
    Path broken = dir.resolve("broken");
    Files.writeString(broken, "not a cluster file\n");
    ClusterLocator.Location all =
        ClusterLocator.locate(
            given("ferrite://h:1", "id", root, broken, Path.of("/t.pem")), Map.of());
    assertEquals("ferrite://h:1", all.master());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ClusterLocator.locate(given("ferrite://h:1", "id", null, broken, null), Map.of()));
    assertTrue(e.getMessage().contains("cluster file " + broken), e.getMessage());
  }
}
