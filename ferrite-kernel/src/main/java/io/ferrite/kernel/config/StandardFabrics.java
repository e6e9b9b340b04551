package io.ferrite.kernel.config;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.netty.Tls;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.tcp.TcpFabric;

/** The switch from fabric name to fabric class for real deployments (tcp, shm). */
final class StandardFabrics {
  private StandardFabrics() {}

  static Fabric open(String name, Tls tls, FabricTuning tuning) {
    return switch (name) {
      case "tcp" -> new TcpFabric(tls, tuning);
      case "shm" -> new ShmFabric(tuning);
      default ->
          throw new FerriteException(
              ErrorCode.UNSUPPORTED,
              "fabric '" + name + "' (expected: tcp or shm; local needs an explicit network)");
    };
  }
}
