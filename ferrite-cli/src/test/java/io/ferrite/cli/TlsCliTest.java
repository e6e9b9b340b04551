package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.netty.Tls;
import io.ferrite.fabric.tcp.TlsFiles;
import io.ferrite.kernel.config.ClusterFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** {@code ferrite tls generate} and {@code ferrite local --tls}. */
class TlsCliTest extends LocalCliCapture {
  @Test
  void generateWritesAUsablePairWithAnOwnerOnlyKey() throws IOException {
    Path d = dir.resolve("certs");
    assertEquals(
        0, run("tls", "generate", "--dir", d.toString(), "--name", "ip:127.0.0.1"), err.toString());
    Path cert = d.resolve(TlsFiles.CERT);
    Path key = d.resolve(TlsFiles.KEY);
    assertTrue(Files.readString(cert).startsWith("-----BEGIN CERTIFICATE-----"), cert.toString());
    assertTrue(Files.readString(key).startsWith("-----BEGIN PRIVATE KEY-----"), key.toString());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
    // Netty's JDK provider takes them as a server's pair and a client's trust.
    assertNotNull(Tls.fromPem(cert, key, cert));
    try (Stream<Path> s = Files.list(d)) {
      assertEquals(2, s.count(), "only cert.pem and key.pem are left (no keystore)");
    }
    assertTrue(out.toString().contains("tls.cert=" + cert.toAbsolutePath()), out.toString());
  }

  @Test
  void generateRefusesANameThatIsNotIpOrDns() {
    assertEquals(2, run("tls", "generate", "--dir", dir.toString(), "--name", "127.0.0.1"));
    assertTrue(err.toString().contains("expected: ip:ADDRESS or dns:HOST"), err.toString());
  }

  @Test
  void localWithTlsChecksOverTlsAndTellsClientsTheCertificate() {
    Path local = dir.resolve("local");
    int code =
        run(
            "local",
            "--tls",
            "--exit-after-check",
            "--port",
            "0",
            "--dir",
            local.toString(),
            "--default-cluster-file",
            dir.resolve("home/.ferrite/cluster").toString(),
            "--cluster-id",
            "tls" + ProcessHandle.current().pid(),
            "--dram",
            "128m",
            "--disk",
            "64m",
            "--set",
            "shm.dir=" + shm);
    assertEquals(0, code, out + "\n" + err);
    String text = out.toString();
    assertTrue(text.contains("via tcp") && text.contains("self-check passed"), text);
    Path cert = local.resolve("tls").resolve(TlsFiles.CERT);
    assertTrue(text.contains("tls      " + cert.toAbsolutePath()), text);
    assertEquals(
        cert.toAbsolutePath(), ClusterFile.read(local.resolve(ClusterFile.FILE_NAME)).tlsTrust());
  }
}
