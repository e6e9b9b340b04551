package io.ferrite.kv;

import static io.ferrite.kv.PilafLayout.ENTRY;
import static io.ferrite.kv.PilafLayout.entryOffset;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.extent.Extents;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One-sided lookups in a Pilaf table (Pilaf §3.2–3.4). A probe reads the entry of the key's next
 * cuckoo slot; if it is in use and its tag matches, it reads the extent the self-verifying pointer
 * names and compares the key. A miss is confirmed by one batch that reads the {@code moves}
 * counter, the three entries and the counter again: with no displacement in between, the key was
 * absent at that instant (a key moving between slots would otherwise be missed).
 */
final class PilafReader extends LayoutReader {
  PilafReader(KvTable table, LookupStats stats) {
    super(table, stats);
  }

  @Override
  Object probeTable(FabricConnection c, ShardLayout l, byte[] key, long h) {
    int tag = KeyHash.tag(h);
    ByteBuffer e = ByteBuffer.allocate(ENTRY);
    for (int way = 0; way < KeyHash.WAYS; way++) {
      int slot = KeyHash.slot(h, way, l.slots());
      // readSync, not join(read): over tcp the caller then reads the answer itself (a lane).
      c.readSync(l.entries(), entryOffset(slot), e.clear());
      PilafLayout.Entry en = PilafLayout.decode(e, 0);
      if (en == null) {
        return TORN;
      }
      if (en.moved()) {
        return STALE;
      }
      if (!en.inUse() || en.tag() != tag) {
        continue;
      }
      Object v = readExtent(c, l, en, key);
      if (v == TORN || v == STALE) {
        return v;
      }
      if (v != MISS) {
        stats.lookup(way + 1);
        remember(h, en);
        return v;
      }
    }
    return confirmMiss(c, l, h, tag);
  }

  private void remember(long h, PilafLayout.Entry en) {
    remember(h, en.region(), en.offset(), en.length(), en.checksum());
  }

  /**
   * Reads and verifies the extent {@code en} points to: the value, MISS (another key), TORN, STALE.
   */
  private static Object readExtent(
      FabricConnection c, ShardLayout l, PilafLayout.Entry en, byte[] key) {
    if (en.region() >= l.extents().size()) {
      return STALE;
    }
    byte[] ext = new byte[en.length()];
    c.readSync(l.extents().get(en.region()), en.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(ext));
    return verifiedValue(ext, en, key);
  }

  private static Object verifiedValue(byte[] ext, PilafLayout.Entry en, byte[] key) {
    if (!Extents.valid(ext, en.checksum())) {
      return TORN; // freed and reused, or a torn copy
    }
    return Extents.hasKey(ext, key) ? Extents.value(ext) : MISS;
  }

  /**
   * Confirms a miss: one batch reads the header (epoch, moves), the key's three entries and the
   * header again; ops on one connection take effect in issue order. Unchanged and even {@code
   * moves} means no key moved while the entries were read, so none of them holding the key proves
   * it absent at that instant.
   */
  private Object confirmMiss(FabricConnection c, ShardLayout l, long h, int tag) {
    stats.missConfirms.increment();
    Batch b = c.batch();
    ByteBuffer before = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer after = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer[] es = new ByteBuffer[KeyHash.WAYS];
    List<CompletableFuture<Void>> fs = new ArrayList<>(5);
    fs.add(b.read(l.entries(), 0, before));
    for (int way = 0; way < KeyHash.WAYS; way++) {
      es[way] = ByteBuffer.allocate(ENTRY);
      fs.add(b.read(l.entries(), entryOffset(KeyHash.slot(h, way, l.slots())), es[way]));
    }
    fs.add(b.read(l.entries(), 0, after));
    Futures.join(b.flush());
    for (CompletableFuture<Void> f : fs) {
      Futures.join(f);
    }
    long epoch = before.getLong(PilafLayout.EPOCH_OFFSET);
    long m1 = before.getLong(PilafLayout.MOVES_OFFSET);
    long m2 = after.getLong(PilafLayout.MOVES_OFFSET);
    if (epoch != l.epoch() || after.getLong(PilafLayout.EPOCH_OFFSET) != epoch) {
      return STALE;
    }
    if (m1 != m2 || (m1 & 1) != 0) {
      return TORN;
    }
    for (ByteBuffer e : es) {
      PilafLayout.Entry en = PilafLayout.decode(e, 0);
      if (en == null || en.moved() || (en.inUse() && en.tag() == tag)) {
        // Torn, moved, or a candidate appeared since the probe: look again.
        return TORN;
      }
    }
    stats.lookup(KeyHash.WAYS);
    return MISS;
  }

  /**
   * Rounds of one batch per server: first every unhinted key's first-choice entry (and the hinted
   * extents, {@link LayoutReader}); then, per key, the extent its entry names (tag match) or its
   * two other entries; then the extents those name. Most keys live in their first slot, so most
   * finish in two rounds of one read each. Keys whose copies were torn or stale, or that look
   * absent (a miss needs {@link #probe}'s confirmation), are left for the single-key path.
   */
  @Override
  void multiGet(
      List<byte[]> keys,
      long[] hs,
      ShardLayout[] ls,
      byte[][] out,
      boolean[] done,
      Batches round,
      HintedRound hinted) {
    int n = keys.size();
    boolean[] slow = new boolean[n];
    ByteBuffer[] first = new ByteBuffer[n];
    for (int i = 0; i < n; i++) {
      if (hinted.covers(i)) {
        slow[i] = true; // settled by its hint, or left for the single-key path
      } else {
        first[i] = ByteBuffer.allocate(ENTRY);
        readEntry(round, ls[i], hs[i], 0, first[i]);
      }
    }
    if (!hinted.flush(round, keys, hs, out, done)) {
      return;
    }
    // Round 2: extents of first-slot tag matches; the other two entries of everyone else.
    PilafLayout.Entry[] hit = new PilafLayout.Entry[n];
    byte[][] ext = new byte[n][];
    ByteBuffer[][] rest = new ByteBuffer[n][];
    for (int i = 0; i < n; i++) {
      if (slow[i]) {
        continue;
      }
      PilafLayout.Entry en = PilafLayout.decode(first[i], 0);
      if (en == null || en.moved()) {
        slow[i] = true;
      } else if (en.inUse() && en.tag() == KeyHash.tag(hs[i])) {
        slow[i] = !readExtent(round, ls[i], en, hit, ext, i);
      } else {
        rest[i] = new ByteBuffer[] {ByteBuffer.allocate(ENTRY), ByteBuffer.allocate(ENTRY)};
        readEntry(round, ls[i], hs[i], 1, rest[i][0]);
        readEntry(round, ls[i], hs[i], 2, rest[i][1]);
      }
    }
    if (round.isEmpty() || !round.flushAndWait()) {
      return;
    }
    // Round 3: verify first-slot extents; extents of the other entries' tag matches.
    for (int i = 0; i < n; i++) {
      if (slow[i] || done[i]) {
        continue;
      }
      if (hit[i] != null) {
        Object v = verifiedValue(ext[i], hit[i], keys.get(i));
        if (v instanceof byte[] value) {
          out[i] = value;
          done[i] = true;
          stats.lookup(1);
          remember(hs[i], hit[i]);
        } else {
          slow[i] = true;
        }
        continue;
      }
      for (int w = 0; w < rest[i].length; w++) {
        PilafLayout.Entry en = PilafLayout.decode(rest[i][w], 0);
        if (en == null || en.moved()) {
          slow[i] = true;
        } else if (hit[i] == null && en.inUse() && en.tag() == KeyHash.tag(hs[i])) {
          slow[i] = !readExtent(round, ls[i], en, hit, ext, i);
        }
      }
      if (hit[i] == null) {
        slow[i] = true; // absent here: probe() confirms the miss
      }
    }
    if (round.isEmpty() || !round.flushAndWait()) {
      return;
    }
    for (int i = 0; i < n; i++) {
      if (!done[i] && !slow[i] && hit[i] != null) {
        Object v = verifiedValue(ext[i], hit[i], keys.get(i));
        if (v instanceof byte[] value) {
          out[i] = value;
          done[i] = true;
          stats.lookup(2);
          remember(hs[i], hit[i]);
        }
      }
    }
  }

  private static void readEntry(Batches round, ShardLayout l, long h, int way, ByteBuffer dst) {
    round.read(l.entries(), entryOffset(KeyHash.slot(h, way, l.slots())), dst);
  }

  /** Queues the extent read of {@code en} for key {@code i}; false if the layout is stale. */
  private static boolean readExtent(
      Batches round,
      ShardLayout l,
      PilafLayout.Entry en,
      PilafLayout.Entry[] hit,
      byte[][] ext,
      int i) {
    if (en.region() >= l.extents().size()) {
      return false;
    }
    hit[i] = en;
    ext[i] = new byte[en.length()];
    round.read(l.extents().get(en.region()), en.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(ext[i]));
    return true;
  }
}
