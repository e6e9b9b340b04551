package io.ferrite.tx.tao;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A seeded random sequence of Tao operations, each run by one of three clients (each with its own
 * head pointer cache, so caches go stale as the others replace heads), checked against a reference
 * model after every step: obj_get, assoc_count, and assoc_range at random positions and limits
 * (pagination past chunk boundaries, past the end, limit 0), with assoc_delete (which copies the
 * list's newer chunks) and obj_delete.
 */
@ExtendWith(SeedExtension.class)
class TaoModelTest {
  @TempDir Path dir;
  @AutoClose TaoCluster cluster;

  private record Obj(int otype, byte[] data) {}

  private record Key(FatPointer id1, int atype) {}

  @Test
  void randomOperationsMatchAReferenceModel(TestSeed seed) throws Exception {
    cluster = new TaoCluster(dir, 2, false);
    Random random = new Random(seed.value());
    List<Tao> clients = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      clients.add(new Tao(new TxClient(cluster.client()), 200, 40, TaoTest.CHUNK));
    }
    Map<FatPointer, Obj> objects = new HashMap<>();
    Map<Key, List<TaoLayout.Entry>> lists = new HashMap<>(); // newest first
    List<FatPointer> live = new ArrayList<>();
    Set<FatPointer> deleted = new HashSet<>();
    long time = 0;
    int ranges = 0;
    int deletes = 0;
    int longest = 0;
    for (int step = 0; step < 700; step++) {
      Tao tao = clients.get(random.nextInt(clients.size()));
      int op = random.nextInt(100);
      if (live.size() < 3 || op < 6) {
        byte[] data = TaoTest.utf8("o" + step + "-".repeat(random.nextInt(30)));
        int otype = random.nextInt(5);
        FatPointer id = tao.objAdd(otype, data);
        objects.put(id, new Obj(otype, data));
        live.add(id);
        continue;
      }
      // Half the operations on the first few objects: long lists, many chunks.
      FatPointer id = live.get(random.nextInt(random.nextBoolean() ? 3 : live.size()));
      int atype = random.nextInt(3);
      Key key = new Key(id, atype);
      List<TaoLayout.Entry> model = lists.getOrDefault(key, List.of());
      if (op < 10) {
        Obj o = objects.get(id);
        byte[] data = TaoTest.utf8("u" + step);
        data = data.length <= id.size() - TaoLayout.NODE_HEADER ? data : new byte[0];
        tao.objUpdate(id, data);
        objects.put(id, new Obj(o.otype(), data));
      } else if (op < 12 && live.size() > 4) {
        tao.objDelete(id);
        live.remove(id);
        deleted.add(id);
      } else if (op < 16) {
        // Mostly an id2 the list holds (a random entry's), else any object.
        FatPointer id2 =
            !model.isEmpty() && random.nextInt(4) > 0
                ? model.get(random.nextInt(model.size())).id2()
                : live.get(random.nextInt(live.size()));
        List<TaoLayout.Entry> next = new ArrayList<>();
        for (TaoLayout.Entry e : model) {
          if (!e.id2().equals(id2)) {
            next.add(e);
          }
        }
        assertEquals(
            model.size() - next.size(), tao.assocDelete(id, atype, id2), "assoc_delete at " + step);
        lists.put(key, next);
        deletes += model.size() - next.size();
      } else if (op < 55) {
        FatPointer id2 = live.get(random.nextInt(live.size()));
        byte[] data = new byte[random.nextInt(41)];
        random.nextBytes(data);
        tao.assocAdd(id, atype, id2, ++time, data);
        List<TaoLayout.Entry> next = new ArrayList<>();
        next.add(new TaoLayout.Entry(id2, time, data));
        next.addAll(model);
        lists.put(key, next);
        longest = Math.max(longest, next.size());
      } else if (op < 70) {
        assertEquals(model.size(), tao.assocCount(id, atype), "assoc_count at step " + step);
      } else if (op < 85) {
        int pos = random.nextInt(model.size() + 4);
        int limit = random.nextInt(random.nextBoolean() ? 6 : 40);
        List<Tao.Assoc> got = tao.assocRange(id, atype, pos, limit);
        List<TaoLayout.Entry> want =
            model.subList(Math.min(pos, model.size()), Math.min(model.size(), pos + limit));
        assertEquals(show(id, atype, want), TaoTest.show(got), "assoc_range at step " + step);
        ranges++;
      } else {
        Tao.TaoObject o = tao.objGet(id);
        assertEquals(objects.get(id).otype(), o.otype());
        assertArrayEquals(objects.get(id).data(), o.data(), "obj_get at step " + step);
      }
    }
    assertTrue(ranges > 50);
    assertTrue(deletes > 5, "associations deleted: " + deletes);
    for (FatPointer id : deleted) {
      assertEquals(
          ErrorCode.NOT_FOUND,
          assertThrows(FerriteException.class, () -> clients.get(0).assocCount(id, 0)).code());
    }
    // Every list whole, by a fresh client, and the longest spans several chunks.
    Tao fresh = new Tao(new TxClient(cluster.client()), 200, 40, TaoTest.CHUNK);
    for (Map.Entry<Key, List<TaoLayout.Entry>> e : lists.entrySet()) {
      if (deleted.contains(e.getKey().id1())) {
        continue;
      }
      assertEquals(
          show(e.getKey().id1(), e.getKey().atype(), e.getValue()),
          TaoTest.show(fresh.assocRange(e.getKey().id1(), e.getKey().atype(), 0, 10_000)));
    }
    assertTrue(longest > 10, "longest list " + longest);
  }

  static List<String> show(FatPointer id1, int atype, List<TaoLayout.Entry> entries) {
    return TaoTest.show(
        entries.stream().map(e -> new Tao.Assoc(id1, atype, e.id2(), e.time(), e.data())).toList());
  }
}
