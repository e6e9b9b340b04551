package io.ferrite.fabric.tcp;

import io.ferrite.fabric.Fabric;
import java.time.Duration;

/** {@link TcpRpcTest} over TLS. */
class TlsTcpRpcTest extends TcpRpcTest {
  @Override
  Fabric newFabric() {
    return TlsTesting.fabric(2, Duration.ofMillis(500));
  }
}
