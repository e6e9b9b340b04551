package io.ferrite.bench.fabric;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.concurrent.CompletableFuture;

/**
 * One fabric under test, set up in this process: a region file in a fresh temporary directory, a
 * {@link FabricServer} serving it with the bench RPC service, and a client connection to that
 * server through the same fabric. {@link #close()} frees all of it, files included.
 */
final class BenchEndpoint implements AutoCloseable {
  /** The bench's RPC service: opcode {@link #OP_EMPTY} answers nothing, {@link #OP_ECHO} echoes. */
  static final int SERVICE = 1;

  static final int OP_EMPTY = 0;
  static final int OP_ECHO = 1;
  static final int OP_INLINE = 2;

  private static final int NODE_ID = 1;
  private static final int REGION_ID = 1;

  private final Path dir;
  private final Fabric fabric;
  private MappedRegion region;
  private FabricServer server;
  private FabricConnection connection;
  private RegionRef ref;

  private BenchEndpoint(Path dir, Fabric fabric) {
    this.dir = dir;
    this.fabric = fabric;
  }

  /**
   * Creates a {@code regionBytes} region under {@code parent}, fills its first {@code prefill}
   * bytes (so reads hit committed pages, as the memcpy ceiling's do), serves it and connects.
   */
  static BenchEndpoint open(Fabric fabric, Path parent, long regionBytes, long prefill)
      throws IOException {
    Path dir = Files.createTempDirectory(parent, "ferrite-bench-" + fabric.name() + "-");
    BenchEndpoint e = new BenchEndpoint(dir, fabric);
    try {
      e.start(regionBytes, prefill);
      return e;
    } catch (RuntimeException | Error t) {
      e.close();
      throw t;
    }
  }

  private void start(long regionBytes, long prefill) {
    SecureRandom random = new SecureRandom();
    byte[] secret = new byte[32];
    random.nextBytes(secret);
    Credentials credentials = new Credentials("ferrite-bench", secret);
    region =
        MappedRegion.create(
            dir.resolve("region-" + REGION_ID), REGION_ID, regionBytes, random.nextLong());
    for (int i = 0; i < prefill; i += 8) {
      region.buffer().putLong(i, i * 0x9E3779B97F4A7C15L);
    }
    RegionTable table = new RegionTable();
    table.register(region);
    server = fabric.serve(ServerSpec.loopback(NODE_ID, credentials, table, handler(), dir));
    connection = fabric.connect(server.address(), ConnectOptions.of(credentials));
    ref = table.ref(NODE_ID, REGION_ID);
  }

  /**
   * The bench service: empty answers and echoes, nothing else. {@link #OP_INLINE} is the empty
   * answer given on the thread that received the call ({@link RpcHandler#handleInline}), the others
   * go through a dispatch thread like any blocking operation.
   */
  static RpcHandler handler() {
    return new RpcHandler() {
      @Override
      public CompletableFuture<ByteBuffer> handle(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        if (service != SERVICE) {
          return Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service);
        }
        switch (opcode) {
          case OP_EMPTY:
          case OP_INLINE:
            return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
          case OP_ECHO:
            {
              // The request is valid only until the future completes: copy it out.
              ByteBuffer copy = ByteBuffer.allocate(request.remaining());
              copy.put(request.duplicate()).flip();
              return CompletableFuture.completedFuture(copy);
            }
          default:
            return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "bench opcode " + opcode);
        }
      }

      @Override
      public CompletableFuture<ByteBuffer> handleInline(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        return service == SERVICE && opcode == OP_INLINE
            ? CompletableFuture.completedFuture(ByteBuffer.allocate(0))
            : null;
      }
    };
  }

  FabricConnection connection() {
    return connection;
  }

  /** What the server's endpoint counted: zero one-sided ops on shm, where the client does them. */
  Counters serverCounters() {
    return server.counters();
  }

  RegionRef ref() {
    return ref;
  }

  String name() {
    return fabric.name();
  }

  @Override
  public void close() {
    // Reverse order of creation, each step even if an earlier one failed.
    try {
      if (connection != null) {
        connection.close();
      }
    } finally {
      try {
        if (server != null) {
          server.close();
        }
      } finally {
        try {
          fabric.close();
        } finally {
          try {
            if (region != null) {
              region.closeAndDelete();
            }
          } finally {
            deleteRecursively(dir);
          }
        }
      }
    }
  }

  private static void deleteRecursively(Path dir) {
    try {
      FileTrees.delete(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete bench directory " + dir, e);
    }
  }
}
