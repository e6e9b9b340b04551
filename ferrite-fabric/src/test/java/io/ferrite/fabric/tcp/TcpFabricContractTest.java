package io.ferrite.fabric.tcp;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricContractTest;
import io.ferrite.fabric.netty.NettyLeakCheck;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NettyLeakCheck.class)
class TcpFabricContractTest extends FabricContractTest {
  @Override
  protected Fabric newFabric() {
    return new TcpFabric();
  }
}
