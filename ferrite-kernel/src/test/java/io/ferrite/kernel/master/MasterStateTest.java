package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
class MasterStateTest {
  static final long BLOCK = 4096;
  static final long DEAD_MS = 3000;
  static final int LEASE_MS = 10_000;

  TestSeed seed;
  Random random;
  final AtomicLong clock = new AtomicLong(1_000_000);
  MasterState state;

  @BeforeEach
  void setUp(TestSeed seed, Random random) {
    this.seed = seed;
    this.random = random;
    state = newState(clock, seed);
  }

  static MasterState newState(AtomicLong clock, TestSeed seed) {
    return new MasterState(
        "test", BLOCK, DEAD_MS, LEASE_MS, 500, clock::get, new java.util.Random(seed.value()));
  }

  static RegionInfo region(int regionId, String cls, int blocks) {
    return new RegionInfo(new RegionRef(0, regionId, 0x1234L + regionId, blocks * BLOCK), cls, "");
  }

  static int server(MasterState s, String name, RegionInfo... regions) {
    return s.register(-1, name, "host-a", Map.of("local", "local://" + name), List.of(regions));
  }

  long session() {
    return state.openSession("test-client", 0).sessionId();
  }

  @Test
  void registerAssignsIdsAndServersAreAlive() {
    int a = server(state, "a", region(1, "dram", 4));
    int b = server(state, "b", region(1, "dram", 4));
    assertEquals(1, a);
    assertEquals(2, b);
    assertEquals(ServerState.ALIVE, state.serverState(a));
    assertEquals(2, state.members().size());
    ClusterStatus st = state.status();
    assertEquals(2, st.regions());
    assertEquals(8 * BLOCK, st.totals(ServerState.ALIVE).get("dram")[0]);
    // Re-registering with the kept id keeps the id.
    assertEquals(a, state.register(a, "a", "host-a", Map.of(), List.of(region(1, "dram", 4))));
    assertEquals(2, state.members().size());
  }

  @Test
  void aFreedBlockGetsANewKeyAndWaitsForItsRevokeOrARegistration() {
    BlockKeyMintFixture.install(state);
    int a = server(state, "a", region(1, "dram", 1));
    long s = session();
    BlockRef first = state.allocate(s, 1, "", false, "").get(0);
    assertEquals(1, state.free(s, List.of(new int[] {a, 1}), List.of(0L)));
    assertEquals(1, state.quarantinedBlocks());
    FerriteException full =
        assertThrows(FerriteException.class, () -> state.allocate(s, 1, "", false, ""));
    assertEquals(ErrorCode.NO_SPACE, full.code());
    Map<Integer, List<MasterState.ServerRevoke>> owed = state.drainRevokes();
    assertEquals(List.of(a), List.copyOf(owed.keySet()));
    assertEquals(1, owed.get(a).get(0).generation());
    assertTrue(state.drainRevokes().isEmpty(), "drained once");

    state.revoked(owed.get(a));
    BlockRef second = state.allocate(s, 1, "", false, "").get(0);
    assertEquals(first.offset(), second.offset());
    assertFalse(first.region().rkey() == second.region().rkey(), "generation 1 has its own key");
    assertEquals(1, state.generations(a).get(1)[0]);

    // Freed again and never revoked: a registration (which carries the generations) ends it.
    state.free(s, List.of(new int[] {a, 1}), List.of(0L));
    assertEquals(1, state.quarantinedBlocks());
    state.register(a, "a", "host-a", Map.of("local", "local://a"), List.of(region(1, "dram", 1)));
    assertEquals(0, state.quarantinedBlocks());
    assertEquals(2, state.generations(a).get(1)[0]);
    // A late acknowledgement of generation 1 does not free a block that is in use again.
    BlockRef third = state.allocate(s, 1, "", false, "").get(0);
    state.revoked(owed.get(a));
    assertEquals(0, state.quarantinedBlocks());
    assertFalse(third.region().rkey() == second.region().rkey());
  }

  @Test
  void aServerOnlyObtainingItsIdIsNotALiveMemberYet() {
    int id = state.register(-1, "new", "host-a", Map.of(), List.of());
    assertEquals(ServerState.UNKNOWN, state.serverState(id));
    state.register(
        id, "new", "host-a", Map.of("local", "local://new"), List.of(region(1, "dram", 2)));
    assertEquals(ServerState.ALIVE, state.serverState(id));
  }

  @Test
  void aSecondLiveServerCannotClaimAnIdInUse() {
    int a = server(state, "a", region(1, "dram", 4));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> state.register(a, "copy-of-a", "host-b", Map.of(), List.of()));
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.getMessage().contains("ALIVE"), e.getMessage());
    // Once the owner is DEAD, the id may move (a server restored on another host).
    clock.addAndGet(DEAD_MS + 1);
    state.tick();
    assertEquals(a, state.register(a, "a", "host-b", Map.of(), List.of(region(1, "dram", 4))));
  }

  @Test
  void silentServerIsMarkedDeadAndComesBackByRegistering() {
    int a = server(state, "a", region(1, "dram", 4));
    int b = server(state, "b", region(1, "dram", 4));
    clock.addAndGet(DEAD_MS / 2);
    state.heartbeat(a);
    clock.addAndGet(DEAD_MS / 2 + 1);
    state.tick();
    assertEquals(ServerState.ALIVE, state.serverState(a));
    assertEquals(ServerState.DEAD, state.serverState(b), "b missed heartbeats for the timeout");
    assertEquals(MasterState.REASON_TIMEOUT, state.deadReason(b), "not a goodbye");
    assertEquals(null, state.deadReason(a));
    FerriteException e = assertThrows(FerriteException.class, () -> state.heartbeat(b));
    assertEquals(ErrorCode.NOT_FOUND, e.code());

    // A DEAD server's blocks are not handed out.
    long s = session();
    List<BlockRef> got = state.allocate(s, 4, "", false, "");
    assertTrue(got.stream().allMatch(x -> x.serverId() == a), got.toString());
    assertEquals(
        ErrorCode.NO_SPACE,
        assertThrows(FerriteException.class, () -> state.allocate(s, 1, "", false, "")).code());

    state.register(b, "b", "host-a", Map.of(), List.of(region(1, "dram", 4)));
    assertEquals(ServerState.ALIVE, state.serverState(b));
    assertEquals(b, state.allocate(s, 1, "", false, "").get(0).serverId());
  }

  @Test
  void anExclusionNeverPicksTheServersItNames() {
    int a = server(state, "a", region(1, "dram", 4));
    int b = server(state, "b", region(1, "dram", 4));
    int c = server(state, "c", region(1, "dram", 4));
    long s = session();
    // What a replicated block's second copy asks for: anything but the first copy's server.
    for (int i = 0; i < 4; i++) {
      List<BlockRef> got = state.allocate(s, 1, "dram", false, "o", "!" + a + "," + b);
      assertEquals(c, got.get(0).serverId(), "only c is not excluded");
    }
    List<BlockRef> two = state.allocate(s, 2, "dram", false, "o", "a!" + b);
    assertEquals(
        List.of(a, a), two.stream().map(BlockRef::serverId).toList(), "hint and exclusion");
    // c is full, a has 2 left, b 4: excluding a and b leaves nothing, though 6 blocks are free.
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> state.allocate(s, 1, "dram", false, "o", "!" + a + "," + b));
    assertEquals(ErrorCode.NO_SPACE, e.code());
    assertTrue(e.getMessage().contains("excluded"), e.getMessage());
    e = assertThrows(FerriteException.class, () -> state.allocate(s, 1, "dram", false, "o", "!x"));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertEquals(4, state.allocate(s, 4, "dram", false, "o", "!" + a).size(), "b's 4");
  }

  @Test
  void blocksAreHandedOutRoundRobinAcrossServers() {
    int a = server(state, "a", region(1, "dram", 4), region(2, "dram", 4));
    int b = server(state, "b", region(1, "dram", 4));
    int c = server(state, "c", region(1, "dram", 4));
    long s = session();
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      order.add(state.allocate(s, 1, "dram", false, "").get(0).serverId());
    }
    assertEquals(List.of(a, b, c, a, b, c), order);
    // One multi-block allocation also spreads.
    List<BlockRef> many = state.allocate(s, 3, "dram", false, "");
    assertEquals(List.of(a, b, c), many.stream().map(BlockRef::serverId).toList());
    assertEquals(
        List.of(a, b),
        state.allocate(s, 2, "dram", false, "").stream().map(BlockRef::serverId).toList());
    assertEquals(c, state.allocate(s, 1, "dram", false, "").get(0).serverId());
    // b and c are full now (4 each): the rest comes from a's two regions.

    List<BlockRef> rest = state.allocate(s, 4, "dram", false, "");
    assertTrue(rest.stream().allMatch(x -> x.serverId() == a), rest.toString());
    // Distinct blocks, block-aligned.
    List<String> keys = new ArrayList<>();
    for (BlockRef r : rest) {
      assertEquals(0, r.offset() % BLOCK);
      assertEquals(BLOCK, r.length());
      keys.add(r.serverId() + "/" + r.regionId() + "@" + r.offset());
    }
    assertEquals(keys.size(), keys.stream().distinct().count());
  }

  @Test
  void dramIsPreferredAndFullDramSpillsToDisk() {
    server(state, "a", region(1, "disk", 4), region(2, "dram", 2));
    server(state, "b", region(1, "dram", 2));
    long s = session();
    List<BlockRef> first = state.allocate(s, 4, "", false, "");
    assertTrue(first.stream().allMatch(x -> x.storageClass().equals("dram")), first.toString());
    List<BlockRef> spilled = state.allocate(s, 2, "dram", false, "");
    assertTrue(spilled.stream().allMatch(x -> x.storageClass().equals("disk")), spilled.toString());
    FerriteException strict =
        assertThrows(FerriteException.class, () -> state.allocate(s, 1, "dram", true, ""));
    assertEquals(ErrorCode.NO_SPACE, strict.code());
    // A preferred disk allocation takes disk first.
    assertEquals("disk", state.allocate(s, 1, "disk", false, "").get(0).storageClass());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> state.allocate(s, 1, "nvme", false, "")).code());
  }

  @Test
  void noSpaceIsAllOrNothingWithAClearMessage() {
    server(state, "a", region(1, "dram", 2), region(2, "disk", 1));
    long s = session();
    FerriteException e =
        assertThrows(FerriteException.class, () -> state.allocate(s, 4, "", false, ""));
    assertEquals(ErrorCode.NO_SPACE, e.code());
    assertFalse(e.retryable());
    assertTrue(e.getMessage().contains("cannot allocate 4 block(s)"), e.getMessage());
    assertTrue(e.getMessage().contains("dram: 2 of 2 free"), e.getMessage());
    assertTrue(e.getMessage().contains("disk: 1 of 1 free"), e.getMessage());
    // Nothing was taken.
    assertEquals(3, state.allocate(s, 3, "", false, "").size());
  }

  @Test
  void freeReturnsBlocksAndChecksOwnership() {
    server(state, "a", region(1, "dram", 2));
    long s1 = session();
    long s2 = session();
    List<BlockRef> got = state.allocate(s1, 2, "", false, "");
    BlockRef b = got.get(0);
    List<int[]> sr = List.<int[]>of(new int[] {b.serverId(), b.regionId()});
    assertEquals(
        ErrorCode.CONFLICT,
        assertThrows(FerriteException.class, () -> state.free(s2, sr, List.of(b.offset()))).code());
    assertEquals(1, state.free(s1, sr, List.of(b.offset())));
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(FerriteException.class, () -> state.free(s1, sr, List.of(b.offset()))).code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> state.free(s1, sr, List.of(b.offset() + 8)))
            .code());
    assertEquals(b, state.allocate(s2, 1, "", false, "").get(0));
  }

  @Test
  void expiredSessionFreesSessionBlocksButPersistentOnesSurvive() {
    server(state, "a", region(1, "dram", 4));
    long s = state.openSession("dies", 1000).sessionId();
    long keeper = session();
    state.allocate(s, 2, "", false, "");
    List<BlockRef> kept = state.allocate(s, 1, "", false, "files/x");
    clock.addAndGet(600);
    state.renewSession(keeper);
    state.renewSession(s);
    clock.addAndGet(600);
    state.tick();
    assertTrue(state.hasSession(s), "renewed within its lease");
    clock.addAndGet(1001);
    state.renewSession(keeper);
    state.tick();
    assertFalse(state.hasSession(s), "not renewed within its lease");
    assertTrue(state.hasSession(keeper));
    assertEquals(
        ErrorCode.SESSION_EXPIRED,
        assertThrows(FerriteException.class, () -> state.renewSession(s)).code());
    assertEquals(kept, state.owned("files/x"));
    assertEquals(
        BLOCK, state.status().totals(null).get("dram")[1], "only the persistent block is used");
    assertEquals(3, state.allocate(keeper, 3, "", false, "").size());
  }

  @Test
  void closeSessionFreesItsBlocks() {
    server(state, "a", region(1, "dram", 2));
    long s = session();
    state.allocate(s, 2, "", false, "");
    assertEquals(2, state.closeSession(s));
    assertEquals(0, state.status().totals(null).get("dram")[1]);
  }

  @Test
  void reRegisteringWithAChangedRegionDropsItsBlocks() {
    int a = server(state, "a", region(1, "dram", 2), region(2, "dram", 2));
    long s = session();
    state.allocate(s, 4, "", false, "");
    RegionInfo changed = new RegionInfo(new RegionRef(0, 2, 0x9999L, 2 * BLOCK), "dram", "");
    state.register(a, "a", "host-a", Map.of(), List.of(region(1, "dram", 2), changed));
    assertEquals(2 * BLOCK, state.status().totals(null).get("dram")[1]);
    assertEquals(0x9999L, state.regions(a).get(1).ref().rkey());
  }

  @Test
  void badArgumentsAreRejected() {
    server(state, "a", region(1, "dram", 2));
    long s = session();
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> state.allocate(s, 0, "", false, "")).code());
    assertEquals(
        ErrorCode.SESSION_EXPIRED,
        assertThrows(FerriteException.class, () -> state.allocate(42, 1, "", false, "")).code());
    RegionInfo odd = new RegionInfo(new RegionRef(0, 7, 1, BLOCK + 8), "dram", "");
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> server(state, "b", odd)).code());
  }
}
