package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.tcp.TcpFabric;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A tcp server on loopback with one region of seeded random bytes, for tests that pipeline RPC
 * answers beside one-sided reads of that region on one connection and check every byte of both:
 * {@link #readSome} queues reads into a batch, {@link Reads#check} compares what they got with the
 * region, {@link #bytes} is the answer a sized request asks for. {@link #close()} stops the server
 * and the fabric and deletes the region and its directory in {@code /dev/shm}.
 */
final class PipelinedAnswers implements AutoCloseable {
  static final int SVC = 1;

  private final Path dir;
  private final MappedRegion region;
  private final byte[] fill;
  private final TcpFabric fabric;
  private final FabricServer server;
  private final Credentials creds;
  final RegionRef ref;

  /**
   * @param name names the credentials and the directory
   * @param regionBytes the region's size
   * @param handler answers every call to {@link #SVC}
   * @param dispatchThreads the server's dispatch threads; {@code dispatchQueue} their queue
   */
  PipelinedAnswers(
      String name,
      int regionBytes,
      Random random,
      RpcHandler handler,
      int dispatchThreads,
      int dispatchQueue)
      throws Exception {
    dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-" + name + "-");
    creds =
        new Credentials(name, (name + "-test-secret-0123456789").getBytes(StandardCharsets.UTF_8));
    region = MappedRegion.create(dir.resolve("r"), 1, regionBytes, random.nextLong());
    fill = new byte[regionBytes];
    random.nextBytes(fill);
    region.writeFrom(0, ByteBuffer.wrap(fill));
    RegionTable regions = new RegionTable();
    regions.register(region);
    fabric = new TcpFabric(2, Duration.ofSeconds(5));
    server =
        fabric.serve(
            ServerSpec.loopback(4, creds, regions, handler, dir)
                .withServiceThreads(dispatchThreads, dispatchQueue));
    ref = regions.ref(4, 1);
  }

  FabricConnection connect() {
    return fabric.connect(server.address(), ConnectOptions.of(creds));
  }

  FabricServer server() {
    return server;
  }

  /**
   * Queues {@code count} reads into {@code b}, each of 1 to 64 bytes or of 1 byte to {@code
   * maxLarge} bytes (a coin decides), at random offsets.
   */
  Reads readSome(Batch b, Random r, int count, int maxLarge) {
    Reads reads = new Reads();
    for (int k = 0; k < count; k++) {
      int len = 1 + r.nextInt(r.nextBoolean() ? 64 : maxLarge);
      int off = r.nextInt(fill.length - len);
      ByteBuffer dst = ByteBuffer.allocate(len);
      b.read(ref, off, dst);
      reads.dsts.add(dst);
      reads.offs.add(off);
    }
    return reads;
  }

  /** Reads queued by {@link #readSome}, to check once their batch is flushed. */
  final class Reads {
    private final List<ByteBuffer> dsts = new ArrayList<>();
    private final List<Integer> offs = new ArrayList<>();

    /** Fails unless every read got the region's bytes at its offset. */
    void check() {
      for (int k = 0; k < dsts.size(); k++) {
        byte[] want = new byte[dsts.get(k).capacity()];
        System.arraycopy(fill, offs.get(k), want, 0, want.length);
        assertArrayEquals(want, dsts.get(k).array(), "read " + k);
      }
    }
  }

  /** {@code n} bytes drawn from {@code seed}: what a sized request asks the handler to answer. */
  static byte[] bytes(long seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** A sized request: answer {@code n} bytes drawn from {@code seed}. */
  static ByteBuffer sizedRequest(int n, long seed) {
    return ByteBuffer.allocate(12).putInt(0, n).putLong(4, seed);
  }

  @Override
  public void close() throws IOException {
    try {
      server.close();
      fabric.close();
    } finally {
      region.closeAndDelete();
      Files.deleteIfExists(dir);
    }
  }
}
