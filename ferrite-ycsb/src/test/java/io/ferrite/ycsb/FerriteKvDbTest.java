package io.ferrite.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import site.ycsb.Status;

/** The binding's record encoding and what it does without a cluster. */
class FerriteKvDbTest {
  @Test
  void recordsRoundTripWithBinaryFieldsAndEmptyValues() {
    Map<String, byte[]> m = new LinkedHashMap<>();
    m.put("field0", new byte[] {0, 1, 2, 0});
    m.put("field1", new byte[0]);
    m.put("ünïcode", "v".getBytes(StandardCharsets.UTF_8));
    Map<String, byte[]> back = FerriteKvDb.decode(FerriteKvDb.encode(m));
    assertEquals(m.keySet(), back.keySet());
    for (String k : m.keySet()) {
      assertArrayEquals(m.get(k), back.get(k), k);
    }
    assertEquals(0, FerriteKvDb.decode(FerriteKvDb.encode(Map.of())).size());
  }

  @Test
  void scansAreNotImplementedHere() {
    assertEquals(Status.NOT_IMPLEMENTED, new FerriteKvDb().scan("t", "k", 10, null, null));
  }
}
