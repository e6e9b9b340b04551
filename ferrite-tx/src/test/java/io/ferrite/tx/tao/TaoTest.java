package io.ferrite.tx.tao;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tao's API end to end over the local fabric: round trips, the one-sided reads each read takes,
 * cached head pointers invalidated by incarnations, deletes, and bad input.
 */
@ExtendWith(SeedExtension.class)
class TaoTest {
  /**
   * Chunks of 264 payload bytes (5 lines): a 44-byte header and five 6-byte associations (40 bytes
   * each) fill one.
   */
  static final int CHUNK = 264;

  @TempDir Path dir;
  @AutoClose TaoCluster cluster;

  Tao start() throws Exception {
    cluster = new TaoCluster(dir, 2, false);
    return tao();
  }

  Tao tao() {
    return new Tao(new TxClient(cluster.client()), 300, 64, CHUNK);
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void objectsRoundTrip() throws Exception {
    Tao tao = start();
    FatPointer a = tao.objAdd(7, utf8("alice"));
    FatPointer b = tao.objAdd(8, new byte[0]);
    assertNotEquals(a, b);
    assertEquals(7, tao.objGet(a).otype());
    assertArrayEquals(utf8("alice"), tao.objGet(a).data());
    assertEquals(0, tao.objGet(b).data().length);
    tao.objUpdate(a, utf8("alice v2, a longer value"));
    assertArrayEquals(utf8("alice v2, a longer value"), tao.objGet(a).data());
    // Another client names the object by its id alone: no lookup.
    Tao other = tao();
    assertArrayEquals(utf8("alice v2, a longer value"), other.objGet(a).data());
    assertEquals(a, Tao.parseId(Tao.idString(a)));
    // The update keeps the object's lists.
    tao.assocAdd(a, 1, b, 10, utf8("x"));
    tao.objUpdate(a, utf8("v3"));
    assertEquals(1, other.assocCount(a, 1));
    assertEquals(7, other.objGet(a).otype());
  }

  @Test
  void assocsRoundTripNewestFirstAcrossChunks() throws Exception {
    Tao tao = start();
    FatPointer a = tao.objAdd(1, utf8("a"));
    List<FatPointer> targets = new ArrayList<>();
    for (int i = 0; i < 23; i++) {
      FatPointer t = tao.objAdd(2, utf8("t" + i));
      targets.add(t);
      tao.assocAdd(a, 5, t, 1000 + i, utf8(String.format(Locale.ROOT, "e%05d", i)));
    }
    assertEquals(23, tao.assocCount(a, 5));
    assertEquals(0, tao.assocCount(a, 6));
    assertEquals(List.of(), tao.assocRange(a, 6, 0, 10));
    Tao reader = tao();
    List<Tao.Assoc> all = reader.assocRange(a, 5, 0, 100);
    assertEquals(23, all.size());
    for (int i = 0; i < 23; i++) {
      Tao.Assoc e = all.get(i);
      int k = 22 - i;
      assertEquals(targets.get(k), e.id2());
      assertEquals(1000 + k, e.time());
      assertArrayEquals(utf8(String.format(Locale.ROOT, "e%05d", k)), e.data());
      assertEquals(a, e.id1());
      assertEquals(5, e.atype());
    }
    assertEquals(show(all.subList(7, 12)), show(reader.assocRange(a, 5, 7, 5)));
    assertEquals(List.of(), reader.assocRange(a, 5, 23, 5));
    assertEquals(List.of(), reader.assocRange(a, 5, 0, 0));
    assertEquals(show(all.subList(20, 23)), show(reader.assocRange(a, 5, 20, 50)));
  }

  /** Reads are one-sided: one read per obj_get, per cached assoc_count and head-only range. */
  @Test
  void readsAreOneSidedReadsInTheCommonCase() throws Exception {
    Tao tao = start();
    FatPointer a = tao.objAdd(1, utf8("a"));
    for (int i = 0; i < 12; i++) {
      tao.assocAdd(a, 3, a, i, utf8("abcdef"));
    }
    Tao reader = tao();
    TxClient rc = reader.txClient();
    reader.objGet(a); // maps the region: the one RPC of this client
    long before = rc.oneSidedReads();
    reader.objGet(a);
    assertEquals(before + 1, rc.oneSidedReads(), "obj_get");
    assertEquals(12, reader.assocCount(a, 3));
    assertEquals(before + 3, rc.oneSidedReads(), "assoc_count, head pointer not cached: 2");
    assertEquals(12, reader.assocCount(a, 3));
    assertEquals(before + 4, rc.oneSidedReads(), "assoc_count, head pointer cached: 1");
    assertEquals(2, reader.assocRange(a, 3, 0, 2).size());
    assertEquals(before + 5, rc.oneSidedReads(), "assoc_range within the head: 1");
    // 12 entries of 40 bytes: head holds 2 (12 = 5 + 5 + 2), then two full chunks.
    assertEquals(12, reader.assocRange(a, 3, 0, 12).size());
    assertEquals(before + 8, rc.oneSidedReads(), "assoc_range over head + 2 chunks: 3");
    assertEquals(0, reader.refetches());
    assertEquals(0, reader.fallbacks());
  }

  @Test
  void aCachedHeadIsInvalidatedWhenItsHeadIsFreedAndReallocated() throws Exception {
    Tao writer = start();
    Tao reader = tao();
    FatPointer a = writer.objAdd(1, utf8("a"));
    for (int i = 0; i < 5; i++) {
      writer.assocAdd(a, 0, a, i, utf8("abcdef")); // fills the head exactly
    }
    assertEquals(5, reader.assocCount(a, 0)); // caches the head pointer
    FatPointer oldHead = headOf(writer, a, 0);
    writer.assocAdd(a, 0, a, 5, utf8("abcdef")); // replaces the head, frees the old one
    FatPointer newHead = headOf(writer, a, 0);
    assertNotEquals(oldHead, newHead);
    assertThrows(FerriteException.class, () -> reader.txClient().lockFreeRead(oldHead));
    // Reallocate the freed slot: same size class, same region; its incarnation differs.
    Transaction t = writer.txClient().txBegin();
    FatPointer reused = null;
    for (int i = 0; i < 64 && reused == null; i++) {
      FatPointer p = t.txAlloc(CHUNK, a);
      t.txWrite(p, new byte[CHUNK]);
      reused = p.offset() == oldHead.offset() ? p : null;
    }
    assertTrue(t.txCommit().committed());
    assertTrue(reused != null, "the freed head's slot is reused for its size class");
    assertNotEquals(oldHead.incarnation(), reused.incarnation());
    long refetches = reader.refetches();
    assertEquals(6, reader.assocCount(a, 0));
    assertEquals(refetches + 1, reader.refetches(), "the stale head pointer was read again");
    assertEquals(6, reader.assocRange(a, 0, 0, 10).size());
    assertEquals(5, reader.assocRange(a, 0, 0, 10).get(0).time());
    // An add through a stale cached head (reader's cache now current; make writer's stale).
    reader.assocAdd(a, 0, a, 6, utf8("abcdef"));
    for (int i = 7; i < 11; i++) {
      reader.assocAdd(a, 0, a, i, utf8("abcdef"));
    }
    writer.assocAdd(a, 0, a, 11, utf8("abcdef"));
    assertEquals(12, reader.assocCount(a, 0));
    assertEquals(11, reader.assocRange(a, 0, 0, 1).get(0).time());
  }

  /** Associations as comparable text (their data is an array). */
  static List<String> show(List<Tao.Assoc> l) {
    return l.stream()
        .map(
            e ->
                Tao.idString(e.id1())
                    + " "
                    + e.atype()
                    + " "
                    + Tao.idString(e.id2())
                    + " "
                    + e.time()
                    + " "
                    + java.util.HexFormat.of().formatHex(e.data()))
        .toList();
  }

  static FatPointer headOf(Tao tao, FatPointer id, int atype) {
    TaoLayout.Node n = TaoLayout.decodeNode(id, tao.txClient().lockFreeRead(id));
    return n.head(atype);
  }

  @Test
  void assocDeleteCopiesTheListDownToTheOldestHitAndFreesTheOldChunks() throws Exception {
    Tao writer = start();
    Tao reader = tao();
    FatPointer a = writer.objAdd(1, utf8("a"));
    FatPointer b = writer.objAdd(1, utf8("b"));
    FatPointer c = writer.objAdd(1, utf8("c"));
    for (int i = 0; i < 12; i++) {
      writer.assocAdd(a, 0, i % 4 == 1 ? b : c, i, utf8("abcdef")); // b at times 1, 5, 9
    }
    assertEquals(12, reader.assocCount(a, 0)); // caches the head
    FatPointer oldHead = headOf(writer, a, 0);
    assertEquals(0, writer.assocDelete(a, 0, a), "no such association");
    assertEquals(oldHead, headOf(writer, a, 0), "nothing written");
    assertEquals(3, writer.assocDelete(a, 0, b));
    assertNotEquals(oldHead, headOf(writer, a, 0));
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(FerriteException.class, () -> reader.txClient().lockFreeRead(oldHead)).code());
    assertEquals(9, reader.assocCount(a, 0));
    List<Long> times = reader.assocRange(a, 0, 0, 100).stream().map(Tao.Assoc::time).toList();
    assertEquals(List.of(11L, 10L, 8L, 7L, 6L, 4L, 3L, 2L, 0L), times);
    assertEquals(
        List.of(7L, 6L, 4L), reader.assocRange(a, 0, 3, 3).stream().map(Tao.Assoc::time).toList());
    writer.assocAdd(a, 0, b, 12, utf8("abcdef"));
    assertEquals(10, reader.assocCount(a, 0));
    assertEquals(9, writer.assocDelete(a, 0, c));
    assertEquals(1, reader.assocCount(a, 0));
    assertEquals(1, writer.assocDelete(a, 0, b));
    assertEquals(0, reader.assocCount(a, 0));
    assertEquals(List.of(), reader.assocRange(a, 0, 0, 10));
    assertError(
        ErrorCode.NOT_FOUND,
        "unknown Tao object id",
        () ->
            writer.assocDelete(
                new FatPointer(a.region(), a.offset(), a.size(), a.incarnation() + 1), 0, b));
  }

  /** A list whose object's region is full grows in another region (NO_SPACE beside it). */
  @Test
  void aListGrowsWhenItsObjectsRegionIsFull() throws Exception {
    Tao tao = start();
    FatPointer first = tao.objAdd(1, utf8("first"));
    FatPointer last = first;
    for (int i = 0; i < 5000 && last.region() == first.region(); i++) {
      last = tao.objAdd(1, utf8("filler"));
    }
    assertNotEquals(first.region(), last.region(), "the objects filled their first region");
    for (int i = 0; i < 12; i++) {
      tao.assocAdd(first, 0, last, i, utf8("abcdef"));
    }
    assertNotEquals(first.region(), headOf(tao, first, 0).region());
    Tao reader = tao();
    assertEquals(12, reader.assocCount(first, 0));
    assertEquals(
        List.of(11L, 10L, 9L),
        reader.assocRange(first, 0, 0, 3).stream().map(Tao.Assoc::time).toList());
    assertEquals(12, tao.assocDelete(first, 0, last));
    assertEquals(0, reader.assocCount(first, 0));
  }

  @Test
  void deleteMakesTheIdAndItsCachedHeadsUnknown() throws Exception {
    Tao tao = start();
    Tao reader = tao();
    FatPointer a = tao.objAdd(1, utf8("a"));
    FatPointer b = tao.objAdd(1, utf8("b"));
    for (int i = 0; i < 8; i++) {
      tao.assocAdd(a, 2, b, i, utf8("abcdef"));
    }
    assertEquals(8, reader.assocCount(a, 2));
    tao.objDelete(a);
    for (Runnable r :
        List.<Runnable>of(
            () -> reader.objGet(a),
            () -> reader.assocCount(a, 2),
            () -> reader.assocRange(a, 2, 0, 3),
            () -> tao.objUpdate(a, utf8("x")),
            () -> tao.assocAdd(a, 2, b, 9, utf8("x")))) {
      FerriteException e = assertThrows(FerriteException.class, r::run);
      assertEquals(ErrorCode.NOT_FOUND, e.code());
      assertTrue(
          e.getMessage().contains("unknown Tao object id " + Tao.idString(a)), e::getMessage);
    }
    assertArrayEquals(utf8("b"), reader.objGet(b).data());
  }

  @Test
  void badInputGetsAClearError(TestSeed seed) throws Exception {
    Tao tao = start();
    FatPointer a = tao.objAdd(1, new byte[10]);
    tao.assocAdd(a, 0, a, 0, new byte[0]);
    FatPointer head = headOf(tao, a, 0);
    assertError(ErrorCode.TOO_LARGE, "limit: 300", () -> tao.objAdd(1, new byte[301]));
    assertError(ErrorCode.TOO_LARGE, "holds at most", () -> tao.objUpdate(a, new byte[200]));
    assertError(ErrorCode.TOO_LARGE, "limit: 64", () -> tao.assocAdd(a, 0, a, 1, new byte[65]));
    assertError(ErrorCode.INVALID_ARGUMENT, "otype: -1", () -> tao.objAdd(-1, new byte[1]));
    assertError(ErrorCode.INVALID_ARGUMENT, "atype: -2", () -> tao.assocCount(a, -2));
    assertError(ErrorCode.INVALID_ARGUMENT, "pos -1", () -> tao.assocRange(a, 0, -1, 3));
    assertError(ErrorCode.INVALID_ARGUMENT, "limit -3", () -> tao.assocRange(a, 0, 0, -3));
    assertError(ErrorCode.INVALID_ARGUMENT, "id: null", () -> tao.objGet(null));
    assertError(
        ErrorCode.INVALID_ARGUMENT,
        "is not a Tao object (it is a Tao association list)",
        () -> tao.objGet(head));
    assertError(
        ErrorCode.INVALID_ARGUMENT,
        "is not a Tao object",
        () -> tao.assocAdd(head, 0, a, 1, new byte[0]));
    assertError(ErrorCode.INVALID_ARGUMENT, "expected: region:offset", () -> Tao.parseId("1:2"));
    for (int t = 1; t < 4; t++) {
      tao.assocAdd(a, t, a, 0, new byte[0]);
    }
    assertError(
        ErrorCode.INVALID_ARGUMENT, "(the limit)", () -> tao.assocAdd(a, 9, a, 0, new byte[0]));
    // An id into a region the client has no capability for.
    FatPointer nowhere = new FatPointer(999, a.offset(), a.size(), a.incarnation());
    assertEquals(
        ErrorCode.NO_SUCH_REGION,
        assertThrows(FerriteException.class, () -> tao.objGet(nowhere)).code());
    // A plain tx object that is not Tao's.
    Transaction t = tao.txClient().txBegin();
    FatPointer plain = t.txAlloc(200, a);
    byte[] junk = new byte[200];
    new Random(seed.value()).nextBytes(junk);
    junk[0] = 1;
    t.txWrite(plain, junk);
    assertTrue(t.txCommit().committed());
    assertError(ErrorCode.INVALID_ARGUMENT, "not a Tao structure", () -> tao.objGet(plain));
    assertThrows(IllegalArgumentException.class, () -> new Tao(tao.txClient(), 10, 100, 120));
  }

  static void assertError(ErrorCode code, String text, Runnable r) {
    FerriteException e = assertThrows(FerriteException.class, r::run);
    assertEquals(code, e.code(), e::getMessage);
    assertTrue(e.getMessage().contains(text), () -> "\"" + e.getMessage() + "\" names " + text);
  }
}
