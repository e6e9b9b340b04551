package io.ferrite.fabric.tcp;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricContractTest;
import io.ferrite.fabric.testing.NettyLeakExtension;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every case of the fabric contract again over TLS, where the tcp fast paths are off. */
@ExtendWith(NettyLeakExtension.class)
class TlsTcpFabricContractTest extends FabricContractTest {
  @Override
  protected Fabric newFabric() {
    return new TcpFabric(TlsTesting.tls());
  }
}
