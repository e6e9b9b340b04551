package io.ferrite.fabric.shm;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricContractTest;
import io.ferrite.fabric.testing.NettyLeakExtension;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NettyLeakExtension.class)
class ShmFabricContractTest extends FabricContractTest {
  @Override
  protected Fabric newFabric() {
    return new ShmFabric();
  }
}
