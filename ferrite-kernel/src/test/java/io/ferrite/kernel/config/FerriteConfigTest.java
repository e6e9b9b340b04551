package io.ferrite.kernel.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.tcp.TcpFabric;
import io.ferrite.fabric.tcp.TlsFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FerriteConfigTest {
  @TempDir Path dir;

  @Test
  void defaults() {
    FerriteConfig c = FerriteConfig.defaults();
    assertEquals(64L << 20, c.regionSize());
    assertEquals(1L << 20, c.blockSize());
    assertEquals(Duration.ofMillis(500), c.heartbeatInterval());
    assertEquals(Duration.ofSeconds(3), c.deadTimeout());
    assertEquals(Duration.ofSeconds(10), c.sessionLease());
    assertEquals("auto", c.clientFabric());
    assertEquals(7100, c.masterPort());
  }

  @Test
  void fileThenEnvironmentThenFlags() throws Exception {
    Path f = dir.resolve("ferrite.properties");
    Files.writeString(f, "master.port=7200\ncluster.id=from-file\nblock.size=64k\n");
    FerriteConfig c =
        FerriteConfig.load(
            f,
            Map.of("FERRITE_MASTER_PORT", "7300", "FERRITE_CLUSTER", "ignored: not a key"),
            Map.of("cluster.id", "from-flags"));
    assertEquals(7300, c.masterPort(), "environment overrides the file");
    assertEquals("from-flags", c.clusterId(), "flags override everything");
    assertEquals(64 << 10, c.blockSize(), "the file overrides defaults");
  }

  @Test
  void mistakesAreReportedWithWhatWasExpected() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set("master.prot", "1").build());
    assertTrue(e.getMessage().contains("unknown configuration key 'master.prot'"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                FerriteConfig.builder()
                    .set(FerriteConfig.REGION_SIZE, "3m")
                    .set(FerriteConfig.BLOCK_SIZE, "2m")
                    .build());
    assertTrue(e.getMessage().contains("expected: a multiple of"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set(FerriteConfig.HEARTBEAT_INTERVAL, "soon").build());
    assertTrue(e.getMessage().contains("expected: a duration"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set(FerriteConfig.CLIENT_FABRIC, "rdma").build());
    assertTrue(e.getMessage().contains("auto, shm, tcp or local"), e.getMessage());
    IllegalArgumentException noSecret =
        assertThrows(IllegalArgumentException.class, () -> FerriteConfig.defaults().credentials());
    assertTrue(noSecret.getMessage().contains("cluster.secret.file"), noSecret.getMessage());
  }

  @Test
  void secretFileIsCreatedOwnerOnlyAndReadBack() throws Exception {
    Path secret = dir.resolve("sub/secret");
    byte[] a = Secrets.readOrCreate(secret);
    assertEquals(Secrets.SECRET_BYTES, a.length);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)));
    assertEquals(
        "rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(secret.getParent())));
    assertArrayEquals(a, Secrets.readOrCreate(secret));
    FerriteConfig c =
        FerriteConfig.builder().set(FerriteConfig.SECRET_FILE, secret.toString()).build();
    assertArrayEquals(a, c.credentials().secret());
    assertTrue(!c.toString().contains(java.util.HexFormat.of().formatHex(a)));
  }

  @Test
  void clusterFileRoundTrips() {
    Path f = dir.resolve("cluster");
    ClusterFile cf = new ClusterFile("ferrite://127.0.0.1:7100", "c1", dir.resolve("secret"));
    cf.write(f);
    assertEquals(cf.uri(), ClusterFile.read(f).uri());
    assertEquals(cf.secretFile().toAbsolutePath(), ClusterFile.read(f).secretFile());
  }

  @Test
  void tlsIsOffByDefaultAndNeedsFilesWhenOn() {
    assertEquals(null, FerriteConfig.defaults().tls());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FerriteConfig.builder().set(FerriteConfig.TLS_ENABLED, "true").build());
    assertTrue(e.getMessage().contains("tls.trust"), e.getMessage());
  }

  @Test
  void tlsFromTheConfiguredPairReachesTheTcpFabric() throws Exception {
    Path cert = TlsFiles.generate(dir.resolve("tls"), TlsFiles.LOOPBACK, 1);
    FerriteConfig c =
        FerriteConfig.builder()
            .set(FerriteConfig.TLS_ENABLED, "true")
            .set(FerriteConfig.TLS_CERT, cert.toString())
            .set(FerriteConfig.TLS_KEY, cert.resolveSibling(TlsFiles.KEY).toString())
            .build();
    assertTrue(c.tls() != null, "the trust defaults to the certificate");
    try (Fabric tcp = FabricFactory.standard(c).open("tcp");
        Fabric plain = FabricFactory.standard().open("tcp")) {
      assertTrue(((TcpFabric) tcp).tls(), "standard(cfg) opens tcp with TLS");
      assertTrue(!((TcpFabric) plain).tls(), "standard() opens tcp without");
    }
    // A key file that is not there is named.
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> c.with(FerriteConfig.TLS_KEY, dir.resolve("nope.pem").toString()).tls());
    assertTrue(e.getMessage().contains("nope.pem"), e.getMessage());
  }

  @Test
  void clusterFileCarriesTheTlsTrust() {
    Path f = dir.resolve("cluster");
    new ClusterFile("ferrite://h:1", "id", dir.resolve("secret"), dir.resolve("cert.pem")).write(f);
    assertEquals(dir.resolve("cert.pem").toAbsolutePath(), ClusterFile.read(f).tlsTrust());
    new ClusterFile("ferrite://h:1", "id", dir.resolve("secret")).write(f);
    assertEquals(null, ClusterFile.read(f).tlsTrust());
  }
}
