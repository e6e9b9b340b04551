package io.ferrite.bench.fabric;

import io.ferrite.bench.BenchConfig;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.fabric.netty.Tls;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.tcp.TcpFabric;
import io.ferrite.fabric.tcp.TlsFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Makes a fabric from its name, as given to {@code --fabrics}. */
public final class Fabrics {
  /** The tcp fabric with TLS 1.3 (a self-signed pair made for the run). */
  public static final String TCP_TLS = "tcp-tls";

  /** Every name {@link #create} knows. */
  public static final List<String> NAMES = List.of("local", "shm", "tcp", TCP_TLS);

  private static Path tlsDir;

  private Fabrics() {}

  /**
   * TLS from a self-signed pair for 127.0.0.1 made once per JVM by {@link TlsFiles} (keytool) in a
   * temporary directory removed at exit.
   */
  static synchronized Tls tls() {
    try {
      if (tlsDir == null) {
        Path d = Files.createTempDirectory("ferrite-bench-tls-");
        d.toFile().deleteOnExit();
        d.resolve(TlsFiles.CERT).toFile().deleteOnExit();
        d.resolve(TlsFiles.KEY).toFile().deleteOnExit();
        TlsFiles.generate(d, TlsFiles.LOOPBACK, 1);
        tlsDir = d;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make a TLS certificate for " + TCP_TLS, e);
    }
    Path cert = tlsDir.resolve(TlsFiles.CERT);
    return Tls.fromPem(cert, tlsDir.resolve(TlsFiles.KEY), cert);
  }

  /**
   * A new fabric called {@code name}; the caller closes it. A local fabric gets a network of its
   * own, so its server and client must come from the same instance.
   */
  public static Fabric create(String name) {
    // The environment's switches (FERRITE_NETTY_LANES, FERRITE_SHM_RINGS...): see BenchConfig.
    FabricTuning tuning = BenchConfig.environment().fabricTuning();
    return switch (name) {
      case "local" -> new LocalFabric(new LocalNetwork());
      case "shm" -> new ShmFabric(tuning);
      case "tcp" -> new TcpFabric(null, tuning);
      case TCP_TLS -> new TcpFabric(tls(), tuning);
      default ->
          throw new IllegalArgumentException(
              "fabric: " + name + " (expected one of: " + String.join(", ", NAMES) + ")");
    };
  }
}
