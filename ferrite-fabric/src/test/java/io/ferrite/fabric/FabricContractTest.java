package io.ferrite.fabric;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.fabric.verify.VersionedObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The contract of {@link OneSided}, {@link FabricConnection} and {@link Fabric}, which every fabric
 * must pass. A subclass supplies the fabric; everything else is the same test.
 *
 * <p>Randomness is seeded: {@code -Dtests.seed=N} replays a run; the seed is in every failure
 * message.
 */
public abstract class FabricContractTest {
  protected static final int SERVICE_ECHO = 1;
  protected static final int SERVICE_FAIL = 2;

  /** Answers the caller's {@link RpcContext#role()} as its wire byte. */
  protected static final int SERVICE_ROLE = 3;

  /** Never answers: the call waits for its deadline or for the server to go. */
  protected static final int SERVICE_HANG = 4;

  protected static final long BIG = 80L << 20;

  protected final long seed = Long.getLong("tests.seed", System.nanoTime());
  protected final Random random = new Random(seed);
  protected final Credentials credentials =
      new Credentials("contract", "0123456789abcdef-secret".getBytes(StandardCharsets.UTF_8));

  protected Fabric fabric;
  protected Path dir;
  protected RegionTable regions;
  protected MappedRegion big;
  protected MappedRegion small;
  protected FabricServer server;
  protected FabricConnection conn;
  protected RegionRef bigRef;
  protected RegionRef smallRef;
  private final List<AutoCloseable> closeLater = new ArrayList<>();

  /** A new, unstarted fabric; closed by the test. */
  protected abstract Fabric newFabric();

  /**
   * Whether this fabric tears reads on purpose in {@link #tornReadsAreDetectedAndNeverAccepted}, so
   * that detection must be observed in every run.
   */
  protected boolean injectsTears() {
    return false;
  }

  /** Turns on the fabric's deterministic tear injection (local fabric only). */
  protected void injectTears(Fabric f) {}

  protected String where() {
    return fabric.name() + " (seed " + seed + ", reproduce with -Dtests.seed=" + seed + ")";
  }

  @BeforeEach
  void start(TestInfo info) throws IOException {
    Path shm = Paths.get("/dev/shm");
    Path base = Files.isDirectory(shm) ? shm : Paths.get(System.getProperty("java.io.tmpdir"));
    dir = Files.createTempDirectory(base, "ferrite-contract-");
    regions = new RegionTable();
    big = MappedRegion.create(dir.resolve("r1"), 1, BIG, random.nextLong());
    small = MappedRegion.create(dir.resolve("r2"), 2, 4096, random.nextLong());
    regions.register(big);
    regions.register(small);
    fabric = newFabric();
    server = fabric.serve(ServerSpec.loopback(7, credentials, regions, this::handle, dir));
    conn = connect();
    bigRef = regions.ref(7, 1);
    smallRef = regions.ref(7, 2);
  }

  protected FabricConnection connect() {
    FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(credentials));
    closeLater.add(c);
    return c;
  }

  private CompletableFuture<ByteBuffer> handle(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    if (service == SERVICE_ECHO) {
      ByteBuffer out = ByteBuffer.allocate(request.remaining() + 4).order(ByteOrder.LITTLE_ENDIAN);
      out.putInt(opcode).put(request.duplicate()).flip();
      return CompletableFuture.completedFuture(out);
    }
    if (service == SERVICE_FAIL) {
      return Futures.failed(ErrorCode.CONFLICT, "service says no to opcode " + opcode);
    }
    if (service == SERVICE_ROLE) {
      return CompletableFuture.completedFuture(
          ByteBuffer.wrap(new byte[] {(byte) ctx.role().wire()}));
    }
    if (service == SERVICE_HANG) {
      return new CompletableFuture<>();
    }
    return Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service);
  }

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : closeLater) {
      c.close();
    }
    if (server != null) {
      server.close();
    }
    if (fabric != null) {
      fabric.close();
    }
    for (MappedRegion r : regions.all()) {
      r.close();
    }
    FileTrees.delete(dir);
  }

  private static ByteBuffer randomBuffer(Random rnd, int len, boolean direct, int pad) {
    ByteBuffer b = direct ? ByteBuffer.allocateDirect(len + pad) : ByteBuffer.allocate(len + pad);
    byte[] bytes = new byte[len];
    rnd.nextBytes(bytes);
    b.position(pad);
    b.put(bytes);
    b.position(pad);
    return b;
  }

  private static byte[] bytesOf(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  private long regionChecksum(MappedRegion r, int len) {
    ByteBuffer b = ByteBuffer.allocateDirect(len);
    r.readInto(0, b);
    return Checksum64.of(b, 0, len);
  }

  private void assertFails(ErrorCode expected, CompletableFuture<?> f) {
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(f), where());
    assertEquals(expected, e.code(), where() + ": " + e.getMessage());
    assertNotNull(e.getMessage());
  }

  // ---------------------------------------------------------------- data

  @Test
  void readsBackExactlyEverySizeAtUnalignedOffsets() {
    int[] sizes = {
      1,
      2,
      3,
      7,
      8,
      9,
      15,
      16,
      17,
      63,
      64,
      65,
      255,
      256,
      257,
      1023,
      1024,
      1025,
      4095,
      4096,
      4097,
      65535,
      65536,
      65537,
      (1 << 20) - 1,
      1 << 20,
      (1 << 20) + 3,
      (4 << 20) + 5,
      16 << 20,
      64 << 20
    };
    for (int size : sizes) {
      long offset = 1 + random.nextInt(4093);
      boolean direct = random.nextBoolean();
      int pad = random.nextInt(8);
      ByteBuffer src = randomBuffer(random, size, direct, pad);
      byte[] expected = bytesOf(src);
      byte before = readByte(offset - 1);
      byte after = readByte(offset + size);

      Futures.join(conn.write(bigRef, offset, src));
      assertEquals(pad, src.position(), "write must not move the source position");

      ByteBuffer dst =
          direct ? ByteBuffer.allocate(size + pad + 3) : ByteBuffer.allocateDirect(size + pad + 3);
      dst.position(pad).limit(pad + size);
      Futures.join(conn.read(bigRef, offset, dst));
      assertEquals(pad, dst.position(), "read must not move the destination position");
      assertEquals(pad + size, dst.limit(), "read must not move the destination limit");
      assertArrayEquals(expected, bytesOf(dst), where() + ": size " + size + " at " + offset);

      // The server's own view of the memory agrees, and the neighbours are untouched.
      ByteBuffer serverView = ByteBuffer.allocate(size);
      big.readInto(offset, serverView);
      assertArrayEquals(expected, serverView.array(), where() + ": server view, size " + size);
      assertEquals(before, readByte(offset - 1), where() + ": byte before " + size + " B write");
      assertEquals(after, readByte(offset + size), where() + ": byte after " + size + " B write");
    }
  }

  private byte readByte(long offset) {
    return big.buffer().getByte((int) offset);
  }

  @Test
  void blockingConveniencesMatchAsyncOps() {
    ByteBuffer src = randomBuffer(random, 100, false, 0);
    conn.writeSync(smallRef, 8, src);
    ByteBuffer dst = ByteBuffer.allocate(100);
    conn.readSync(smallRef, 8, dst);
    assertArrayEquals(bytesOf(src), dst.array(), where());
    assertEquals(0, conn.fetchAndAddSync(smallRef, 256, 5), where());
    assertEquals(5, conn.compareAndSwapSync(smallRef, 256, 5, 9), where());
    assertEquals(9, small.getLongAcquire(256), where());
  }

  // ---------------------------------------------------------------- atomics

  @Test
  void fetchAndAddFromManyThreadsLosesNoUpdate() throws Exception {
    int threads = 4;
    int perThread = 3000;
    long word = 8L * (1 + random.nextInt(500));
    Set<Long> seen = ConcurrentHashMap.newKeySet();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    CyclicBarrier go = new CyclicBarrier(threads);
    for (int t = 0; t < threads; t++) {
      FabricConnection c = t % 2 == 0 ? conn : connect();
      boolean async = t % 2 == 1;
      Thread th =
          new Thread(
              () -> {
                try {
                  go.await();
                  List<CompletableFuture<Long>> pending = new ArrayList<>();
                  for (int i = 0; i < perThread; i++) {
                    if (async) {
                      pending.add(c.fetchAndAdd(smallRef, word, 1));
                      if (pending.size() == 32) {
                        for (CompletableFuture<Long> f : pending) {
                          seen.add(Futures.join(f));
                        }
                        pending.clear();
                      }
                    } else {
                      seen.add(c.fetchAndAddSync(smallRef, word, 1));
                    }
                  }
                  for (CompletableFuture<Long> f : pending) {
                    seen.add(Futures.join(f));
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "faa-" + t);
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) {
      th.join();
    }
    if (failure.get() != null) {
      throw new AssertionError(where(), failure.get());
    }
    long total = (long) threads * perThread;
    assertEquals(total, small.getLongAcquire(word), where() + ": final value");
    assertEquals(total, seen.size(), where() + ": every fetch-and-add saw a distinct value");
  }

  @Test
  void compareAndSwapElectsExactlyOneWinner() throws Exception {
    int threads = 4;
    int rounds = 40;
    long word = 8L * (1 + random.nextInt(500));
    FabricConnection[] cs = new FabricConnection[threads];
    for (int t = 0; t < threads; t++) {
      cs[t] = t == 0 ? conn : connect();
    }
    for (int round = 0; round < rounds; round++) {
      small.putLongRelease(word, 0);
      CyclicBarrier go = new CyclicBarrier(threads);
      long[] prev = new long[threads];
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<Thread> ts = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        Thread th =
            new Thread(
                () -> {
                  try {
                    go.await();
                    prev[id] = cs[id].compareAndSwapSync(smallRef, word, 0, id + 1);
                  } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                  }
                },
                "cas-" + t);
        ts.add(th);
        th.start();
      }
      for (Thread th : ts) {
        th.join();
      }
      if (failure.get() != null) {
        throw new AssertionError(where(), failure.get());
      }
      int winners = 0;
      int winner = -1;
      for (int t = 0; t < threads; t++) {
        if (prev[t] == 0) {
          winners++;
          winner = t;
        }
      }
      assertEquals(1, winners, where() + ": round " + round + " winners");
      assertEquals(winner + 1, small.getLongAcquire(word), where() + ": the winner's value stays");
      for (int t = 0; t < threads; t++) {
        if (t != winner) {
          assertEquals(winner + 1, prev[t], where() + ": losers see the winner's value");
        }
      }
    }
  }

  @Test
  void atomicsAreAtomicWithServerCpuAtomics() throws Exception {
    long word = 512;
    int n = 5000;
    Thread local =
        new Thread(
            () -> {
              for (int i = 0; i < n; i++) {
                small.fetchAndAdd(word, 1);
              }
            },
            "server-cpu");
    local.start();
    for (int i = 0; i < n; i++) {
      conn.fetchAndAddSync(smallRef, word, 1);
    }
    local.join();
    assertEquals(2L * n, small.getLongAcquire(word), where());
  }

  // ---------------------------------------------------------------- bad requests

  @Test
  void wrongRkeyFailsAndChangesNothing() {
    RegionRef forged = new RegionRef(7, 2, smallRef.rkey() ^ 1, 4096);
    long before = regionChecksum(small, 4096);
    assertFails(ErrorCode.BAD_RKEY, conn.write(forged, 0, ByteBuffer.allocate(16)));
    assertFails(ErrorCode.BAD_RKEY, conn.read(forged, 0, ByteBuffer.allocate(16)));
    assertFails(ErrorCode.BAD_RKEY, conn.compareAndSwap(forged, 0, 0, 1));
    assertFails(ErrorCode.BAD_RKEY, conn.fetchAndAdd(forged, 0, 1));
    assertEquals(before, regionChecksum(small, 4096), where() + ": region changed");
    // The connection stays usable.
    conn.writeSync(smallRef, 0, ByteBuffer.wrap(new byte[] {1}));
  }

  // ---------------------------------------------------------------- capabilities

  /** A key nobody was given: random, never one of the region's or a block's. */
  private long someOtherKey(long... taken) {
    while (true) {
      long k = random.nextLong();
      boolean clash = k == 0 || k == small.rkey() || k == small.readKey();
      for (long t : taken) {
        clash |= k == t || k == Capabilities.readOnly(t);
      }
      if (!clash) {
        return k;
      }
    }
  }

  /** Block keys on {@code small}: 4 blocks of 1 KiB, blocks 1 and 2 granted to their own keys. */
  private BlockKeys blockKeys() {
    BlockKeys keys = BlockKeys.create(BlockKeys.fileFor(small.file()), 1024, 4);
    small.attachBlockKeys(keys);
    return keys;
  }

  /** {@code f} fails with {@code code} and the read buffer {@code dst} was not written. */
  private void assertRefusedUnread(ErrorCode code, ByteBuffer dst, CompletableFuture<?> f) {
    assertFails(code, f);
    for (int i = 0; i < dst.capacity(); i++) {
      assertEquals((byte) 0x5A, dst.get(i), where() + ": refused read wrote byte " + i);
    }
  }

  private static ByteBuffer sentinel(int n) {
    ByteBuffer b = ByteBuffer.allocate(n);
    for (int i = 0; i < n; i++) {
      b.put(i, (byte) 0x5A);
    }
    return b;
  }

  @Test
  void capabilitiesGrantOnlyTheirBlockAndTheirRights() {
    BlockKeys keys = blockKeys();
    long k1 = someOtherKey();
    long k2 = someOtherKey(k1);
    keys.set(1, k1);
    keys.set(2, k2);
    RegionRef block1 = new RegionRef(7, 2, k1, 4096);
    RegionRef block1ReadOnly = new RegionRef(7, 2, Capabilities.readOnly(k1), 4096);
    RegionRef block2 = new RegionRef(7, 2, k2, 4096);
    RegionRef regionRead = new RegionRef(7, 2, small.readKey(), 4096);
    RegionRef none = new RegionRef(7, 2, someOtherKey(k1, k2), 4096);

    // Another client owns block 2 and writes its data there; this one holds block 1.
    byte[] theirs = new byte[1024];
    random.nextBytes(theirs);
    FabricConnection other = connect();
    other.writeSync(block2, 2048, ByteBuffer.wrap(theirs));
    byte[] mine = new byte[1024];
    random.nextBytes(mine);
    conn.writeSync(block1, 1024, ByteBuffer.wrap(mine));
    ByteBuffer back = ByteBuffer.allocate(1024);
    conn.readSync(block1, 1024, back);
    assertArrayEquals(mine, back.array(), where());
    long before = regionChecksum(small, 4096);

    // Block 1's key on block 2, and across the boundary between 1 and 2: no key for those bytes.
    assertFails(ErrorCode.BAD_RKEY, conn.write(block1, 2048, ByteBuffer.allocate(8)));
    assertRefusedUnread(ErrorCode.BAD_RKEY, sentinel(8), conn.read(block1, 2048, sentinel(8)));
    ByteBuffer dst = sentinel(16);
    assertRefusedUnread(ErrorCode.BAD_RKEY, dst, conn.read(block1, 2040, dst));
    assertFails(ErrorCode.BAD_RKEY, conn.write(block1, 2040, ByteBuffer.allocate(16)));
    assertFails(ErrorCode.BAD_RKEY, conn.compareAndSwap(block1, 2048, 0, 1));
    assertFails(ErrorCode.BAD_RKEY, conn.fetchAndAdd(block1, 2048, 1));
    assertFails(ErrorCode.BAD_RKEY, conn.write(block1, 0, ByteBuffer.allocate(8)));

    // The read-only form of block 1's key reads block 1 and nothing else; writes are denied.
    ByteBuffer ro = ByteBuffer.allocate(1024);
    conn.readSync(block1ReadOnly, 1024, ro);
    assertArrayEquals(mine, ro.array(), where());
    assertFails(
        ErrorCode.PERMISSION_DENIED, conn.write(block1ReadOnly, 1024, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.PERMISSION_DENIED, conn.compareAndSwap(block1ReadOnly, 1024, 0, 1));
    assertFails(ErrorCode.PERMISSION_DENIED, conn.fetchAndAdd(block1ReadOnly, 1024, 1));
    dst = sentinel(8);
    assertRefusedUnread(ErrorCode.BAD_RKEY, dst, conn.read(block1ReadOnly, 2048, dst));

    // The region's read key reads everything and writes nothing.
    ByteBuffer all = ByteBuffer.allocate(1024);
    conn.readSync(regionRead, 2048, all);
    assertArrayEquals(theirs, all.array(), where());
    assertFails(ErrorCode.PERMISSION_DENIED, conn.write(regionRead, 2048, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.PERMISSION_DENIED, conn.compareAndSwap(regionRead, 2048, 0, 1));
    assertFails(ErrorCode.PERMISSION_DENIED, conn.fetchAndAdd(regionRead, 2048, 1));

    // No capability at all.
    dst = sentinel(8);
    assertRefusedUnread(ErrorCode.BAD_RKEY, dst, conn.read(none, 2048, dst));
    assertFails(ErrorCode.BAD_RKEY, conn.write(none, 2048, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.BAD_RKEY, conn.compareAndSwap(none, 2048, 0, 1));
    assertFails(ErrorCode.BAD_RKEY, conn.fetchAndAdd(none, 2048, 1));

    assertEquals(
        before, regionChecksum(small, 4096), where() + ": a refused op changed the region");
    ByteBuffer still = ByteBuffer.allocate(1024);
    other.readSync(block2, 2048, still);
    assertArrayEquals(theirs, still.array(), where());
  }

  @Test
  void revokedBlockKeyFailsAtItsNextOp() {
    BlockKeys keys = blockKeys();
    long stale = someOtherKey();
    keys.set(1, stale);
    RegionRef old = new RegionRef(7, 2, stale, 4096);
    RegionRef oldReadOnly = new RegionRef(7, 2, Capabilities.readOnly(stale), 4096);
    conn.writeSync(old, 1024, ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}));
    conn.readSync(oldReadOnly, 1024, ByteBuffer.allocate(8));

    // Freed and handed to the next owner, who writes its data: the old key is dead at once.
    long fresh = someOtherKey(stale);
    keys.set(1, fresh);
    RegionRef next = new RegionRef(7, 2, fresh, 4096);
    FabricConnection nextOwner = connect();
    byte[] theirs = new byte[1024];
    random.nextBytes(theirs);
    nextOwner.writeSync(next, 1024, ByteBuffer.wrap(theirs));
    long before = regionChecksum(small, 4096);

    ByteBuffer dst = sentinel(1024);
    assertRefusedUnread(ErrorCode.BAD_RKEY, dst, conn.read(old, 1024, dst));
    dst = sentinel(8);
    assertRefusedUnread(ErrorCode.BAD_RKEY, dst, conn.read(oldReadOnly, 1024, dst));
    assertFails(ErrorCode.BAD_RKEY, conn.write(old, 1024, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.BAD_RKEY, conn.compareAndSwap(old, 1024, 0, 1));
    assertFails(ErrorCode.BAD_RKEY, conn.fetchAndAdd(old, 1024, 1));
    assertEquals(before, regionChecksum(small, 4096), where() + ": a stale key changed the region");

    // Revoked with no successor: the block is closed to every key but the owner's.
    keys.set(1, 0);
    assertFails(ErrorCode.BAD_RKEY, nextOwner.read(next, 1024, ByteBuffer.allocate(8)));
    assertFails(
        ErrorCode.BAD_RKEY, conn.read(new RegionRef(7, 2, 0, 4096), 1024, ByteBuffer.allocate(8)));
    conn.readSync(smallRef, 1024, ByteBuffer.allocate(8));
  }

  @Test
  void outOfBoundsFailsAndChangesNothing() {
    long before = regionChecksum(small, 4096);
    assertFails(ErrorCode.OUT_OF_BOUNDS, conn.write(smallRef, 4090, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.OUT_OF_BOUNDS, conn.write(smallRef, -1, ByteBuffer.allocate(1)));
    assertFails(ErrorCode.OUT_OF_BOUNDS, conn.write(smallRef, 4096, ByteBuffer.allocate(1)));
    assertFails(ErrorCode.OUT_OF_BOUNDS, conn.read(smallRef, 4095, ByteBuffer.allocate(2)));
    assertFails(
        ErrorCode.OUT_OF_BOUNDS, conn.read(smallRef, Long.MAX_VALUE - 1, ByteBuffer.allocate(4)));
    assertFails(ErrorCode.OUT_OF_BOUNDS, conn.compareAndSwap(smallRef, 4096, 0, 1));
    assertFails(ErrorCode.OUT_OF_BOUNDS, conn.fetchAndAdd(smallRef, -8, 1));
    assertEquals(before, regionChecksum(small, 4096), where() + ": region changed");
  }

  @Test
  void misalignedAtomicFailsAndChangesNothing() {
    long before = regionChecksum(small, 4096);
    assertFails(ErrorCode.MISALIGNED, conn.compareAndSwap(smallRef, 4, 0, 1));
    assertFails(ErrorCode.MISALIGNED, conn.fetchAndAdd(smallRef, 13, 1));
    assertEquals(before, regionChecksum(small, 4096), where() + ": region changed");
  }

  @Test
  void unknownRegionFails() {
    RegionRef missing = new RegionRef(7, 999, 1, 4096);
    assertFails(ErrorCode.NO_SUCH_REGION, conn.read(missing, 0, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.NO_SUCH_REGION, conn.fetchAndAdd(missing, 0, 1));
  }

  @Test
  void wrongSecretIsRefusedAtConnect() {
    Credentials wrong =
        new Credentials("contract", "not-the-right-secret!".getBytes(StandardCharsets.UTF_8));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> fabric.connect(server.address(), ConnectOptions.of(wrong)).close());
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), where());
    Credentials otherCluster = new Credentials("other", credentials.secret());
    e =
        assertThrows(
            FerriteException.class,
            () -> fabric.connect(server.address(), ConnectOptions.of(otherCluster)).close());
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), where());
  }

  // ---------------------------------------------------------------- roles

  /** The role the handshake proved reaches the service, over the async and blocking call paths. */
  @Test
  void theProvenRoleReachesTheService() throws Exception {
    for (Role r : Role.values()) {
      try (FabricConnection c =
          fabric.connect(server.address(), ConnectOptions.of(credentials.as(r)))) {
        ByteBuffer sync =
            c.callSync(SERVICE_ROLE, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5));
        assertEquals(r.wire(), sync.get(sync.position()), where() + ": callSync as " + r);
        ByteBuffer async =
            c.call(SERVICE_ROLE, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5))
                .get(10, TimeUnit.SECONDS);
        assertEquals(r.wire(), async.get(async.position()), where() + ": call as " + r);
      }
    }
  }

  /**
   * A client whose secret is wrong for its role hears that its own secret is wrong, naming the
   * file: not that the server failed to prove itself.
   */
  @Test
  void aWrongSecretIsReportedAsTheClientsOwn() {
    byte[] clientSecret = credentials.secretFor(Role.CLIENT);
    clientSecret[0] ^= 1;
    Credentials wrong =
        new Credentials("contract", clientSecret, Role.CLIENT, "/etc/x/client.secret");
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> fabric.connect(server.address(), ConnectOptions.of(wrong)).close());
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), where());
    assertTrue(
        e.getMessage()
            .contains(
                "the secret in /etc/x/client.secret is not this cluster's (or not valid for role"
                    + " CLIENT)"),
        where() + ": " + e.getMessage());
    assertFalse(e.getMessage().contains("failed to prove"), where() + ": " + e.getMessage());
    // The right client secret claiming a role it is not (here: the root's) is refused the same way.
    Credentials claimsAdmin =
        new Credentials(
            "contract", credentials.secretFor(Role.CLIENT), Role.ADMIN, "client.secret");
    e =
        assertThrows(
            FerriteException.class,
            () -> fabric.connect(server.address(), ConnectOptions.of(claimsAdmin)).close());
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), where());
    assertTrue(
        e.getMessage().contains("not valid for role ADMIN"), where() + ": " + e.getMessage());
  }

  // ---------------------------------------------------------------- rpc

  @Test
  void rpcRoundTripsAndCarriesServiceErrors() {
    byte[] payload = new byte[1000];
    random.nextBytes(payload);
    ByteBuffer resp =
        conn.callSync(SERVICE_ECHO, 42, ByteBuffer.wrap(payload), Duration.ofSeconds(5));
    resp.order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(42, resp.getInt(), where());
    assertArrayEquals(payload, bytesOf(resp), where());

    ByteBuffer empty =
        conn.callSync(SERVICE_ECHO, 7, ByteBuffer.allocate(0), Duration.ofSeconds(5));
    assertEquals(4, empty.remaining(), where());

    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> conn.callSync(SERVICE_FAIL, 3, ByteBuffer.allocate(0), Duration.ofSeconds(5)));
    assertEquals(ErrorCode.CONFLICT, e.code(), where());
    assertTrue(e.getMessage().contains("service says no to opcode 3"), e.getMessage());

    e =
        assertThrows(
            FerriteException.class,
            () -> conn.callSync(99, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5)));
    assertEquals(ErrorCode.UNKNOWN_SERVICE, e.code(), where());
  }

  // ---------------------------------------------------------------- batching

  @Test
  void batchSendsNothingBeforeFlushAndEverythingAfter() {
    Batch b = conn.batch();
    int n = 64;
    List<CompletableFuture<Long>> adds = new ArrayList<>();
    List<ByteBuffer> reads = new ArrayList<>();
    List<CompletableFuture<Void>> readFutures = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ByteBuffer v = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      v.putLong(0, 1000 + i);
      b.write(bigRef, 8L * i, v);
      adds.add(b.fetchAndAdd(bigRef, 4096, 1));
    }
    for (int i = 0; i < n; i++) {
      ByteBuffer dst = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      reads.add(dst);
      readFutures.add(b.read(bigRef, 8L * i, dst));
    }
    CompletableFuture<ByteBuffer> rpc =
        b.call(SERVICE_ECHO, 5, ByteBuffer.allocate(3), Duration.ofSeconds(5));
    assertEquals(3 * n + 1, b.size());
    assertEquals(0, big.getLongAcquire(4096), where() + ": an op ran before flush()");
    assertEquals(0, big.getLongAcquire(0), where() + ": an op ran before flush()");

    Futures.join(b.flush());
    assertEquals(n, big.getLongAcquire(4096), where());
    Set<Long> prevs = new HashSet<>();
    for (CompletableFuture<Long> f : adds) {
      prevs.add(f.join());
    }
    assertEquals(n, prevs.size(), where());
    for (int i = 0; i < n; i++) {
      assertTrue(readFutures.get(i).isDone());
      assertEquals(1000 + i, reads.get(i).getLong(0), where() + ": ops run in issue order");
    }
    assertEquals(7, rpc.join().remaining(), where());
  }

  // ---------------------------------------------------------------- lifecycle and counting

  @Test
  void closedConnectionFailsOpsAsUnavailable() {
    FabricConnection c = connect();
    c.close();
    assertFails(ErrorCode.UNAVAILABLE, c.read(smallRef, 0, ByteBuffer.allocate(8)));
    assertFails(ErrorCode.UNAVAILABLE, c.fetchAndAdd(smallRef, 0, 1));
    assertFails(
        ErrorCode.UNAVAILABLE,
        c.call(SERVICE_ECHO, 1, ByteBuffer.allocate(0), Duration.ofSeconds(1)));
    // Other connections are unaffected.
    conn.readSync(smallRef, 0, ByteBuffer.allocate(8));
  }

  /**
   * A server that closes while it owes answers fails those calls as UNAVAILABLE, as soon as it
   * goes: never a TIMEOUT, which would tell the caller only that the server was slow.
   */
  @Test
  void aServerClosedWhileItOwesAnswersFailsThemAsUnavailable() throws Exception {
    List<CompletableFuture<ByteBuffer>> owed = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      owed.add(conn.call(SERVICE_HANG, i, ByteBuffer.allocate(0), Duration.ofSeconds(60)));
    }
    // The echo is answered after the hanging calls reached the server (one connection, in order).
    conn.callSync(SERVICE_ECHO, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5));
    for (CompletableFuture<ByteBuffer> f : owed) {
      assertFalse(f.isDone(), where() + ": a hanging call was answered");
    }
    server.close();
    server = null;
    for (CompletableFuture<ByteBuffer> f : owed) {
      assertFails(ErrorCode.UNAVAILABLE, f);
    }
  }

  @Test
  void clientCountersCountOpsAndBytes() {
    FabricConnection c = connect();
    Counters.Snapshot before = c.counters().snapshot();
    for (int i = 0; i < 3; i++) {
      c.readSync(bigRef, 0, ByteBuffer.allocate(100));
    }
    c.writeSync(bigRef, 0, ByteBuffer.allocate(50));
    c.fetchAndAddSync(bigRef, 0, 1);
    c.compareAndSwapSync(bigRef, 0, 0, 0);
    c.callSync(SERVICE_ECHO, 1, ByteBuffer.allocate(10), Duration.ofSeconds(5));
    Futures.join(c.read(smallRef, 4095, ByteBuffer.allocate(8)).exceptionally(t -> null));
    Counters.Snapshot d = c.counters().snapshot().minus(before);
    assertEquals(3, d.ops(OpKind.READ), where() + " " + d);
    assertEquals(300, d.bytes(OpKind.READ), where() + " " + d);
    assertEquals(1, d.errors(OpKind.READ), where() + " " + d);
    assertEquals(1, d.ops(OpKind.WRITE), where() + " " + d);
    assertEquals(50, d.bytes(OpKind.WRITE), where() + " " + d);
    assertEquals(1, d.ops(OpKind.FETCH_AND_ADD), where() + " " + d);
    assertEquals(1, d.ops(OpKind.COMPARE_AND_SWAP), where() + " " + d);
    assertEquals(1, d.ops(OpKind.RPC), where() + " " + d);
  }

  // ---------------------------------------------------------------- torn reads

  /**
   * A writer rewrites a versioned object in place with one-sided writes while readers read it
   * one-sided. A reader accepts a copy only if {@link VersionedObject#verify} passes; every
   * accepted copy is then checked word by word against the exact contents of that version, so a
   * verifier that let a torn copy through fails the test.
   */
  @Test
  void tornReadsAreDetectedAndNeverAccepted() throws Exception {
    int payload = 4096;
    int size = VersionedObject.size(payload);
    long at = 1 << 20;
    int writes = 4000;
    int readers = 2;
    if (injectsTears()) {
      injectTears(fabric);
    }
    FabricConnection writerConn = connect();
    writerConn.writeSync(bigRef, at, encode(0, payload));

    AtomicLong accepted = new AtomicLong();
    AtomicLong torn = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    java.util.concurrent.atomic.AtomicBoolean done =
        new java.util.concurrent.atomic.AtomicBoolean();
    List<Thread> ts = new ArrayList<>();
    for (int r = 0; r < readers; r++) {
      FabricConnection rc = connect();
      Thread th =
          new Thread(
              () -> {
                ByteBuffer copy = ByteBuffer.allocateDirect(size);
                try {
                  while (!done.get()) {
                    rc.readSync(bigRef, at, copy);
                    long v = VersionedObject.verify(copy, payload);
                    if (v == VersionedObject.TORN) {
                      torn.incrementAndGet();
                      continue;
                    }
                    checkExact(copy, v, payload);
                    accepted.incrementAndGet();
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "reader-" + r);
      ts.add(th);
      th.start();
    }
    try {
      for (long v = 1; v <= writes && failure.get() == null; v++) {
        writerConn.writeSync(bigRef, at, encode(v, payload));
      }
    } finally {
      done.set(true);
      for (Thread th : ts) {
        th.join();
      }
    }
    if (failure.get() != null) {
      throw new AssertionError(where(), failure.get());
    }
    System.out.printf(
        java.util.Locale.ROOT,
        "[%s] torn reads detected and retried: %d, verified reads accepted: %d%n",
        fabric.name(),
        torn.get(),
        accepted.get());
    if (injectsTears()) {
      assertTrue(torn.get() > 0, where() + ": injected tears were not detected");
    }
    // After the writer stops, a read is whole.
    ByteBuffer last = ByteBuffer.allocateDirect(size);
    conn.readSync(bigRef, at, last);
    assertEquals(writes, VersionedObject.verify(last, payload), where());
  }

  private static long word(long version, int i) {
    return (version + 1) * 0x9E3779B97F4A7C15L ^ ((long) i << 32 | i);
  }

  private static ByteBuffer encode(long version, int payload) {
    ByteBuffer p = ByteBuffer.allocate(payload).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < payload / 8; i++) {
      p.putLong(word(version, i));
    }
    p.flip();
    ByteBuffer out = ByteBuffer.allocateDirect(VersionedObject.size(payload));
    VersionedObject.encode(version, p, out);
    return out;
  }

  private void checkExact(ByteBuffer copy, long version, int payload) {
    ByteBuffer c = copy.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < payload / 8; i++) {
      if (c.getLong(8 + 8 * i) != word(version, i)) {
        fail(where() + ": accepted a torn read of version " + version + " (word " + i + ")");
      }
    }
  }
}
