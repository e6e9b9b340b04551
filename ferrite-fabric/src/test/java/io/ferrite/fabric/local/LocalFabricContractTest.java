package io.ferrite.fabric.local;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricContractTest;

class LocalFabricContractTest extends FabricContractTest {
  @Override
  protected Fabric newFabric() {
    return new LocalFabric(new LocalNetwork());
  }

  @Override
  protected boolean injectsTears() {
    return true;
  }

  @Override
  protected void injectTears(Fabric f) {
    ((LocalFabric) f).network().faults().tearReads(true);
  }
}
