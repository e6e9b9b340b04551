package io.ferrite.tx.master;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The region map's records: a first-slice REGION record replays at epoch 1, and a server's death
 * promotes the first backup of each region it was the primary of, drops it from those it backed,
 * bumps the epoch of each, and leaves a region without another copy as it was.
 */
class TxDirectoryTest {
  /** A mutation that only journals (applies) records; no member is ALIVE. */
  static MasterContext.Mutation journal(TxDirectory d) {
    return journal(d, Set.of());
  }

  /** A mutation that journals (applies) records, with {@code alive} as the ALIVE members. */
  static MasterContext.Mutation journal(TxDirectory d, Set<Integer> alive) {
    return new MasterContext.Mutation() {
      @Override
      public void commit(byte[] record) {
        d.apply(ByteBuffer.wrap(record).asReadOnlyBuffer());
      }

      @Override
      public List<BlockRef> allocate(
          long sessionId,
          int count,
          String storageClass,
          boolean strict,
          String owner,
          String location) {
        throw new UnsupportedOperationException();
      }

      @Override
      public int free(String owner, List<BlockRef> blocks) {
        throw new UnsupportedOperationException();
      }

      @Override
      public List<BlockRef> owned(String owner) {
        return List.of();
      }

      @Override
      public boolean sessionOpen(long sessionId) {
        return false;
      }

      @Override
      public List<MemberInfo> members() {
        return alive.stream()
            .map(s -> new MemberInfo(s, "s" + s, ServerState.ALIVE, "h" + s, Map.of()))
            .toList();
      }
    };
  }

  /** region → "primary [backups] epoch", from the snapshot (which writes PLACED records). */
  static Map<Integer, String> map(TxDirectory d) {
    Map<Integer, String> out = new TreeMap<>();
    for (byte[] rec : d.snapshot()) {
      Wire.Reader r =
          new Wire.Reader(ByteBuffer.wrap(rec).order(java.nio.ByteOrder.LITTLE_ENDIAN), "rec");
      if (r.u8("type") != 3) {
        continue;
      }
      int region = r.i32("region");
      long epoch = r.i64("epoch");
      int primary = r.i32("primary");
      int n = r.count("backups", 64);
      List<Integer> backups = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        backups.add(r.i32("backup"));
      }
      out.put(region, primary + " " + backups + " " + epoch);
    }
    return out;
  }

  static byte[] placed(int region, long epoch, int primary, int... backups) {
    Wire.Writer w = new Wire.Writer().u8(3).i32(region).i64(epoch).i32(primary).i32(backups.length);
    for (int b : backups) {
      w.i32(b);
    }
    return w.toArray();
  }

  @Test
  void aFirstSliceRegionRecordReplaysAtEpochOne() {
    TxDirectory d = new TxDirectory();
    d.apply(ByteBuffer.wrap(new Wire.Writer().u8(1).i32(4).i32(2).i32(0).toArray()));
    assertEquals(Map.of(4, "2 [] 1"), map(d));
  }

  @Test
  void aDeadServerLeavesEveryPlacementAndEachChangeBumpsTheEpoch() {
    TxDirectory d = new TxDirectory();
    MasterContext.Mutation m = journal(d);
    m.commit(placed(1, 1, 1, 2, 3));
    m.commit(placed(2, 1, 2, 1));
    m.commit(placed(3, 5, 3));
    d.serverDead(1, m);
    assertEquals(Map.of(1, "2 [3] 2", 2, "2 [] 2", 3, "3 [] 5"), map(d));
    d.serverDead(2, m);
    assertEquals(
        Map.of(1, "3 [] 3", 2, "2 [] 2", 3, "3 [] 5"), map(d), "region 2 had no copy left");
  }

  @Test
  void aServerBackAsANewProcessLeavesItsPlacementsAsADeadOneDoes() {
    TxDirectory d = new TxDirectory();
    MasterContext.Mutation m = journal(d);
    d.serverRegistered(1, 11, m);
    m.commit(placed(1, 1, 1, 2));
    d.serverRegistered(1, 11, m); // the same process (a pause): nothing changes
    assertEquals(Map.of(1, "1 [2] 1"), map(d));
    d.serverRegistered(1, 12, m);
    assertEquals(Map.of(1, "2 [] 2"), map(d));
  }
}
