package io.ferrite.kv.server;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.kv.HopscotchLayout;
import io.ferrite.kv.KeyHash;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.ShardLayout;
import io.ferrite.kv.ShardStats;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hopscotch write protocol against every copy a one-sided reader could make, exhaustively. A
 * shard runs random puts and deletes (inline and out-of-line values, displacements, overflow chains
 * and pulls out of them); after every single region write of an operation the test takes a
 * snapshot. A reader's neighbourhood read may copy bucket b from any of those states and bucket b +
 * 1 from any other (a read is not atomic, and nothing orders its bytes), and reads blocks and
 * extents later. For every such combination and every key, the reader's verification (the shared
 * {@link HopscotchLayout#verifyNeighbourhood} and {@link HopscotchLayout#verifyBlock}) must either
 * reject the copy or give the right answer: a key untouched by the operation is never hidden and
 * never has another value. This is what the joint versions, the order of a move's two writes and
 * the chain incarnations are for; switching any of them off fails this test.
 *
 * <p>The same goes for an extent read alone by a hint ({@link Extents}, the current word): every
 * pointer to an extent a reader ever followed is kept as a hint, and after every operation each
 * hint of the written key is read with its current word from one state and the rest from another. A
 * copy that verifies against the hint and is marked current must hold the key's value at the
 * current word's state. Clearing an old extent's current word only after its slot changed fails
 * this test.
 */
@ExtendWith(SeedExtension.class)
class HopscotchProtocolTest {
  static final Object REJECT = new Object();
  static final Object ABSENT = new Object();

  /**
   * What a lookup found through a slot: (extent region id, offset, length, checksum), for hints.
   */
  private static long[] followed;

  @TempDir Path dir;
  final List<MappedRegion> regions = new ArrayList<>();

  @AfterEach
  void close() {
    for (MappedRegion r : regions) {
      r.close();
    }
  }

  private MappedRegion region(long length) {
    int id = regions.size() + 1;
    MappedRegion r = MappedRegion.create(dir.resolve("region-" + id), id, length, 0x5EED + id);
    regions.add(r);
    return r;
  }

  private Map<Integer, byte[]> snapshot() {
    Map<Integer, byte[]> s = new HashMap<>();
    for (MappedRegion r : regions) {
      byte[] b = new byte[(int) r.length()];
      r.readInto(0, ByteBuffer.wrap(b));
      s.put(r.id(), b);
    }
    return s;
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void everyCopyAReaderCanMakeIsRejectedOrRight(Random random) {
    int inline = 40;
    TableOptions o =
        TableOptions.DEFAULTS
            .withLayout(TableOptions.Layout.HOPSCOTCH)
            .withShards(1)
            .withSlotsPerShard(32)
            .withExtents(64 << 10, 1)
            .withLimits(64, 1000)
            .withInlineBytes(inline);
    HopscotchShard shard =
        (HopscotchShard)
            KvShard.create(
                1,
                0,
                o,
                this::region,
                () -> region(64 << 10),
                r -> new RegionRef(1, r.id(), r.rkey(), r.length()));
    List<Map<Integer, byte[]>> states = new ArrayList<>();
    shard.afterEachWrite(() -> states.add(snapshot()));
    Map<String, byte[]> model = new HashMap<>();
    Map<String, List<long[]>> hints = new HashMap<>();
    int maxOverflow = 0;
    int checked = 0;
    int hintsChecked = 0;
    int hintsHeld = 0;
    for (int op = 0; op < 400; op++) {
      String name = "key-" + random.nextInt(60);
      byte[] key = b(name);
      Map<String, byte[]> before = new HashMap<>(model);
      states.clear();
      states.add(snapshot());
      if (random.nextInt(10) < 6) {
        byte[] v = new byte[random.nextInt(80)];
        random.nextBytes(v);
        shard.put(KvProtocol.MODE_PUT, key, v, new byte[0]);
        model.put(name, v);
      } else {
        shard.delete(key);
        model.remove(name);
      }
      ShardLayout l = shard.layout();
      for (int i = 0; i < states.size(); i++) {
        for (int j = 0; j < states.size(); j++) {
          for (int k = Math.max(i, j); k < states.size(); k++) {
            for (int n = 0; n < 60; n++) {
              String other = "key-" + n;
              Object got = lookup(l, o, b(other), states.get(i), states.get(j), states.get(k));
              checked++;
              if (got == REJECT) {
                continue;
              }
              byte[] want = before.get(other);
              byte[] after = model.get(other);
              boolean ok =
                  other.equals(name)
                      ? same(got, want) || same(got, after)
                      : same(got, want) && same(got, after);
              if (!ok) {
                fail(
                    "op "
                        + op
                        + " on "
                        + name
                        + ": bucket b from state "
                        + i
                        + ", b + 1 from "
                        + j
                        + ", later reads from "
                        + k
                        + " of "
                        + states.size()
                        + ": "
                        + other
                        + " read "
                        + (got == ABSENT ? "absent" : ((byte[]) got).length + " B")
                        + ", expected "
                        + (want == null ? "absent" : want.length + " B"));
              }
            }
          }
        }
      }
      // Every hint of the written key, read alone: current word from state i, the rest from k.
      // What it reads must be the key's value at state i's instant, as a reader of the table sees
      // it then: before the op, until the first state whose table gives the new value; after it,
      // from the last state whose table gives the old one on.
      byte[] old = before.get(name);
      byte[] now = model.get(name);
      int firstAfter = states.size();
      int lastBefore = -1;
      for (int i = 0; i < states.size(); i++) {
        Object t = lookup(l, o, key, states.get(i), states.get(i), states.get(i));
        if (same(t, now) && !same(t, old)) {
          firstAfter = Math.min(firstAfter, i);
        } else if (same(t, old) && !same(t, now)) {
          lastBefore = i;
        }
      }
      for (long[] hint : hints.getOrDefault(name, List.of())) {
        for (int i = 0; i < states.size(); i++) {
          for (int k = 0; k < states.size(); k++) {
            byte[] e = extentCopy(hint, states.get(i), states.get(k));
            hintsChecked++;
            if (!Extents.current(e, hint[3]) || !Extents.hasKey(e, key)) {
              continue;
            }
            hintsHeld++;
            byte[] got = Extents.value(e);
            boolean ok =
                (Arrays.equals(got, old) && i < firstAfter)
                    || (Arrays.equals(got, now) && i > lastBefore);
            if (!ok) {
              fail(
                  "op "
                      + op
                      + " on "
                      + name
                      + ": a hint read with its current word from state "
                      + i
                      + " and the rest from "
                      + k
                      + " of "
                      + states.size()
                      + " verified with "
                      + got.length
                      + " B; the table gives the new value from state "
                      + firstAfter
                      + " and the old one until "
                      + lastBefore);
            }
          }
        }
      }
      // The pointers a reader follows now become hints.
      Map<Integer, byte[]> last = states.get(states.size() - 1);
      for (int n = 0; n < 60; n++) {
        followed = null;
        lookup(l, o, b("key-" + n), last, last, last);
        if (followed != null) {
          long[] f = followed;
          List<long[]> known = hints.computeIfAbsent("key-" + n, x -> new ArrayList<>());
          if (known.stream().noneMatch(h -> Arrays.equals(h, f))) {
            known.add(f);
          }
        }
      }
      maxOverflow = Math.max(maxOverflow, shard.stats().overflowKeys());
    }
    assertTrue(
        hintsHeld > 200, "hinted copies that verified: " + hintsHeld + " of " + hintsChecked);
    assertTrue(hintsChecked > 3 * hintsHeld, "stale hints were checked: " + hintsChecked);
    ShardStats s = shard.stats();
    assertTrue(s.moves() > 0, "displacements and pulls happened: " + s);
    assertTrue(maxOverflow > 0, "overflow chains were used");
    assertTrue(checked > 100_000, "copies checked: " + checked);
  }

  private static boolean same(Object got, byte[] want) {
    return want == null ? got == ABSENT : got instanceof byte[] v && Arrays.equals(v, want);
  }

  /**
   * A lookup as {@code HopscotchReader} makes it, over copies taken from given states: bucket b
   * from {@code si}, bucket b + 1 from {@code sj}, blocks and extents from {@code sk}.
   */
  private static Object lookup(
      ShardLayout l,
      TableOptions o,
      byte[] key,
      Map<Integer, byte[]> si,
      Map<Integer, byte[]> sj,
      Map<Integer, byte[]> sk) {
    int slotBytes = HopscotchLayout.slotBytes(o.inlineBytes());
    int bucketBytes = HopscotchLayout.bucketBytes(slotBytes);
    int blockBytes = HopscotchLayout.blockBytes(slotBytes);
    long h = KeyHash.of(key);
    int b = HopscotchLayout.home(h, l.slots() / HopscotchLayout.BUCKET_SLOTS);
    int table = l.entries().regionId();
    byte[] nb = new byte[2 * bucketBytes];
    System.arraycopy(
        si.get(table), (int) HopscotchLayout.bucketOffset(b, bucketBytes), nb, 0, bucketBytes);
    System.arraycopy(
        sj.get(table),
        (int) HopscotchLayout.bucketOffset(b + 1, bucketBytes),
        nb,
        bucketBytes,
        bucketBytes);
    // A hit needs only the bucket it is in to be whole; a miss needs both, jointly consistent.
    for (int i = 0; i < 2 * HopscotchLayout.BUCKET_SLOTS; i++) {
      int bucketAt = (i / HopscotchLayout.BUCKET_SLOTS) * bucketBytes;
      int at =
          bucketAt + HopscotchLayout.BUCKET_HEADER + (i % HopscotchLayout.BUCKET_SLOTS) * slotBytes;
      if (HopscotchLayout.slotMatches(nb, at, slotBytes, key, h)) {
        if (HopscotchLayout.check(nb, bucketAt, bucketBytes) != HopscotchLayout.Check.OK) {
          return REJECT;
        }
        Object v = inSlot(l, nb, at, slotBytes, key, h, sk);
        if (v != null) {
          return v;
        }
      }
    }
    if (HopscotchLayout.verifyNeighbourhood(nb, bucketBytes) != HopscotchLayout.Check.OK) {
      return REJECT;
    }
    byte[] src = nb;
    int ptr = HopscotchLayout.OVERFLOW;
    for (int hops = 0; !HopscotchLayout.isNull(src, ptr); hops++) {
      if (hops > 1000) {
        return REJECT;
      }
      byte[] region = sk.get(l.extents().get(HopscotchLayout.pointerRegion(src, ptr)).regionId());
      byte[] block =
          Arrays.copyOfRange(
              region,
              HopscotchLayout.pointerOffset(src, ptr),
              HopscotchLayout.pointerOffset(src, ptr) + blockBytes);
      if (HopscotchLayout.verifyBlock(
              block, blockBytes, HopscotchLayout.pointerIncarnation(src, ptr))
          != HopscotchLayout.Check.OK) {
        return REJECT;
      }
      for (int i = 0; i < HopscotchLayout.BLOCK_SLOTS; i++) {
        Object v =
            inSlot(l, block, HopscotchLayout.BUCKET_HEADER + i * slotBytes, slotBytes, key, h, sk);
        if (v != null) {
          return v;
        }
      }
      src = block;
      ptr = HopscotchLayout.NEXT;
    }
    return ABSENT;
  }

  /** The value in a verified slot copy if it holds {@code key}, REJECT, or null (not this key). */
  private static Object inSlot(
      ShardLayout l,
      byte[] src,
      int at,
      int slotBytes,
      byte[] key,
      long h,
      Map<Integer, byte[]> sk) {
    if (!HopscotchLayout.slotMatches(src, at, slotBytes, key, h)) {
      return null;
    }
    if (!HopscotchLayout.outOfLine(src, at)) {
      return HopscotchLayout.inlineValue(src, at);
    }
    long[] pointer = {
      l.extents().get(HopscotchLayout.extentRegion(src, at)).regionId(),
      HopscotchLayout.extentOffset(src, at),
      HopscotchLayout.extentLength(src, at),
      HopscotchLayout.extentChecksum(src, at)
    };
    byte[] e = extentCopy(pointer, sk, sk);
    if (!Extents.valid(e, pointer[3])) {
      return REJECT;
    }
    if (!Extents.hasKey(e, key)) {
      return null;
    }
    followed = pointer;
    return Extents.value(e);
  }

  /**
   * A copy of the extent {@code p} names: its current word from state {@code sw}, the rest from sr.
   */
  private static byte[] extentCopy(long[] p, Map<Integer, byte[]> sw, Map<Integer, byte[]> sr) {
    int off = (int) p[1];
    byte[] e = Arrays.copyOfRange(sr.get((int) p[0]), off, off + (int) p[2]);
    System.arraycopy(sw.get((int) p[0]), off + Extents.CURRENT, e, Extents.CURRENT, 4);
    return e;
  }
}
