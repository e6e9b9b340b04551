package io.ferrite.kernel.proto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The STATUS body carries service regions per face in a section appended after the members: a
 * reader that predates it parses the same prefix it always did, and a new reader of an old body
 * gets the same status without faces.
 */
class ClusterStatusWireTest {
  private static final long MIB = 1024 * 1024;

  private static ClusterStatus status() {
    MemberInfo a = new MemberInfo(1, "s1", ServerState.ALIVE, "h", Map.of("tcp", "127.0.0.1:1"));
    MemberInfo b = new MemberInfo(2, "s2", ServerState.DEAD, "h", Map.of());
    return new ClusterStatus(
        "c",
        64 * 1024,
        List.of(
            new ClusterStatus.Member(
                a,
                5,
                List.of(
                    new ClusterStatus.ClassUsage(
                        "dram", 256 * MIB, 192 * MIB, Map.of("kv", 128 * MIB)),
                    new ClusterStatus.ClassUsage("disk", MIB, 0))),
            new ClusterStatus.Member(
                b,
                1,
                List.of(
                    new ClusterStatus.ClassUsage(
                        "dram", 4 * MIB, 4 * MIB, Map.of("kv", MIB, "nodes", 2 * MIB))))),
        6,
        2,
        Map.of(
            "memory", Map.of("allocations", 2L, "bytes", 8 * MIB),
            "nodes", Map.of("nodes", 1L)));
  }

  /** What writeStatus wrote before the per-face section (a copy of the old layout). */
  private static byte[] legacy(ClusterStatus s) {
    Wire.Writer w = new Wire.Writer();
    w.str(s.clusterId()).i64(s.blockSize()).i32(s.regions()).i32(s.sessions());
    w.i32(s.members().size());
    for (ClusterStatus.Member m : s.members()) {
      MasterProtocol.writeMember(w, m.info());
      w.i32(m.regions()).i32(m.usage().size());
      for (ClusterStatus.ClassUsage u : m.usage()) {
        w.str(u.storageClass()).i64(u.capacityBytes()).i64(u.usedBytes());
      }
    }
    return w.toArray();
  }

  private static ClusterStatus withoutFaces(ClusterStatus s) {
    return new ClusterStatus(
        s.clusterId(),
        s.blockSize(),
        s.members().stream()
            .map(
                m ->
                    new ClusterStatus.Member(
                        m.info(),
                        m.regions(),
                        m.usage().stream()
                            .map(
                                u ->
                                    new ClusterStatus.ClassUsage(
                                        u.storageClass(), u.capacityBytes(), u.usedBytes()))
                            .toList()))
            .toList(),
        s.regions(),
        s.sessions());
  }

  /** What writeStatus wrote before the lost section: the faces, then nothing. */
  private static byte[] beforeLost(byte[] now, ClusterStatus s) {
    Wire.Writer w = new Wire.Writer();
    w.i32(s.lost().size());
    s.lost()
        .forEach(
            (f, counts) -> {
              w.str(f).i32(counts.size());
              counts.forEach((k, v) -> w.str(k).i64(v));
            });
    return Arrays.copyOf(now, now.length - w.toArray().length);
  }

  @Test
  void facesRoundTripAndOldReadersSeeTheSamePrefix() {
    ClusterStatus s = status();
    Wire.Writer w = new Wire.Writer();
    MasterProtocol.writeStatus(w, s);
    byte[] now = w.toArray();
    assertEquals(s, MasterProtocol.readStatus(new Wire.Reader(ByteBuffer.wrap(now), "status")));

    byte[] old = legacy(s);
    assertTrue(now.length > old.length, "the per-face section is there");
    assertArrayEquals(old, Arrays.copyOf(now, old.length), "an old reader's layout is a prefix");
    assertEquals(
        withoutFaces(s),
        MasterProtocol.readStatus(new Wire.Reader(ByteBuffer.wrap(old), "status")),
        "an old master's body reads as a status without faces");
    byte[] noLost = beforeLost(now, s);
    ClusterStatus read = MasterProtocol.readStatus(new Wire.Reader(ByteBuffer.wrap(noLost), "s"));
    assertEquals(Map.of(), read.lost(), "a master from before the lost section: nothing lost");
    assertEquals(s.members(), read.members());
  }

  @Test
  void formatAndJsonShowBlocksAndEachFace() {
    ClusterStatus s = status();
    ClusterStatus.ClassUsage u = s.members().get(0).usage().get(0);
    assertEquals(64 * MIB, u.blockBytes());
    String table = s.format();
    assertTrue(table.contains("dram 192 MiB/256 MiB used: blocks 64 MiB, kv 128 MiB"), table);
    assertTrue(table.contains("dram 4 MiB/4 MiB used: blocks 1 MiB, kv 1 MiB, nodes 2 MiB"), table);
    assertTrue(table.contains("disk 0 B/1 MiB used  regions"), "no breakdown without faces");
    assertTrue(table.contains("lost  memory: 2 allocations, 8 MiB (reads answer DATA_LOST"), table);
    assertTrue(table.contains("lost  nodes: 1 nodes"), table);
    String json = s.toJson();
    assertTrue(
        json.endsWith(
            ",\"lost\":{\"memory\":{\"allocations\":2,\"bytes\":8388608},\"nodes\":{\"nodes\":1}}}"),
        json);
    assertTrue(
        json.contains(
            "\"dram\":{\"capacity\":268435456,\"used\":201326592,\"blocks\":67108864,"
                + "\"services\":{\"kv\":134217728}}"),
        json);
  }

  @Test
  void underReplicatedIsPrintedApartFromWhatWasLost() {
    ClusterStatus s = status();
    ClusterStatus only =
        new ClusterStatus(
            s.clusterId(),
            s.blockSize(),
            s.members(),
            s.regions(),
            s.sessions(),
            Map.of("nodes", Map.of(ClusterStatus.UNDER_REPLICATED, 3L)));
    String table = only.format();
    assertTrue(
        table.contains("under-replicated  nodes: 3 (copies being made again; reads work)"), table);
    assertTrue(!table.contains("lost  nodes"), "nothing lost: " + table);
    ClusterStatus both =
        new ClusterStatus(
            s.clusterId(),
            s.blockSize(),
            s.members(),
            s.regions(),
            s.sessions(),
            Map.of("nodes", Map.of("nodes", 1L, "bytes", 5L, ClusterStatus.UNDER_REPLICATED, 2L)));
    table = both.format();
    assertTrue(table.contains("under-replicated  nodes: 2 ("), table);
    assertTrue(table.contains("lost  nodes: 1 nodes, 5 B (reads answer DATA_LOST"), table);
  }
}
