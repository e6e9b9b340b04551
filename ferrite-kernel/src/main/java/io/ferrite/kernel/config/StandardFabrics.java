package io.ferrite.kernel.config;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FerriteException;

/** The switch from fabric name to fabric class for real deployments (tcp, shm). */
final class StandardFabrics {
  private StandardFabrics() {}

  static Fabric open(String name) {
    // The tcp and shm fabrics land with the netty branch: case "tcp" -> new TcpFabric(); case
    // "shm" -> new ShmFabric().
    throw new FerriteException(
        ErrorCode.UNSUPPORTED,
        "fabric '" + name + "' is not available in this build (expected: tcp or shm)");
  }
}
