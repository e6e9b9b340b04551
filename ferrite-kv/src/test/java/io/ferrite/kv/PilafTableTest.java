package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The table contract for Pilaf's 3-way cuckoo layout, and what is Pilaf's own. */
class PilafTableTest extends KvTableContractTest {
  @Override
  TableOptions.Layout layout() {
    return TableOptions.Layout.PILAF;
  }

  @Override
  TableOptions tiny() {
    return small().withShards(1).withSlotsPerShard(64);
  }

  @Test
  void cuckooReachesPastThreeQuartersAndProbesAtMostThreeSlots() {
    KvTable t = kv.createTable("cuckoo", tiny().withSlotsPerShard(2000));
    for (int i = 0; i < 1800; i++) {
      t.put(b("k" + i), b("v" + i));
    }
    t.lookupStats().reset();
    for (int i = 0; i < 1800; i++) {
      t.get(b("k" + i));
    }
    assertTrue(t.lookupStats().maxProbes() <= 3, t.lookupStats().toString());
    assertTrue(t.stats().get(0).moves() > 0, "cuckoo displacements at 90%");
  }
}
