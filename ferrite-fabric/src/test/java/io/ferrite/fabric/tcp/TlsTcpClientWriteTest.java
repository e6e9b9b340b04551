package io.ferrite.fabric.tcp;

import io.ferrite.fabric.Fabric;
import java.time.Duration;

/** {@link TcpClientWriteTest} over TLS: every frame through the pipeline, none direct. */
class TlsTcpClientWriteTest extends TcpClientWriteTest {
  @Override
  Fabric newFabric() {
    return TlsTesting.fabric(2, Duration.ofMillis(500));
  }
}
