package io.ferrite.fabric.tcp;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricContractTest;
import io.ferrite.fabric.testing.NettyLeakExtension;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NettyLeakExtension.class)
class TcpFabricContractTest extends FabricContractTest {
  @Override
  protected Fabric newFabric() {
    return new TcpFabric();
  }
}
