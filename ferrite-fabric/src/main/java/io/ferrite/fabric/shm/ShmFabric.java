package io.ferrite.fabric.shm;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.NettyConnection;
import io.ferrite.fabric.netty.NettyFabric;
import io.ferrite.fabric.netty.NettyServer;
import io.ferrite.fabric.netty.NettyTransport;
import io.ferrite.fabric.netty.RingHost;
import io.ferrite.fabric.tcp.TcpFabric;
import io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The same-host fabric: the client maps a server's region files itself, so one-sided ops are plain
 * memory accesses that cost the server's CPU nothing (the CPU bypass of RDMA, for real). The
 * server's endpoint is a Unix domain socket in {@link ServerSpec#socketDir()} speaking the tcp
 * fabric's frames and handshake; over it the client authenticates and asks for each region's file
 * once (MAP, which checks the rkey).
 *
 * <p>RPCs go through shared memory: after the handshake the client asks for a file of two rings
 * (RINGS; the file lives in the socket directory and is unlinked once both ends mapped it), and a
 * call is then a record written to the request ring and one read from the response ring, with no
 * system call while both ends poll ({@link RingClient}, {@link RingServer}). The socket only
 * carries doorbells for a sleeping side, and calls too large for the ring. {@link Rings#disabled}
 * (or {@link FabricTuning#shmRings} false, config {@code shm.rings=false}) keeps every RPC on the
 * socket, for comparisons.
 *
 * <p>Addresses are {@code shm:///abs/path/server-<nodeId>.sock}. Where Netty's epoll transport is
 * unavailable (no Unix sockets), the endpoint falls back to tcp loopback and says so in its
 * address: {@code shm+tcp://127.0.0.1:port}; regions are still mapped by the client.
 */
public final class ShmFabric extends NettyFabric {
  private static final System.Logger LOG = System.getLogger(ShmFabric.class.getName());

  static final String SCHEME = "shm";
  static final String FALLBACK_SCHEME = "shm+tcp";

  /**
   * The RPC rings of this fabric's servers and connections.
   *
   * @param enabled whether servers offer rings and clients ask for them
   * @param requestCapacity bytes of each connection's request ring (a power of two, 4 KiB to 16
   *     MiB); a request up to an eighth of it fits one record
   * @param responseCapacity bytes of each response ring; longer responses travel in chunks
   */
  public record Rings(boolean enabled, int requestCapacity, int responseCapacity) {
    public Rings {
      if (enabled) {
        RingFile.checkCapacity("requestCapacity", requestCapacity);
        RingFile.checkCapacity("responseCapacity", responseCapacity);
      }
    }

    /**
     * 256 KiB of requests, 1 MiB of responses per connection (off with {@link
     * FabricTuning#shmRings}, config {@code shm.rings=false}).
     */
    public static Rings defaults() {
      return new Rings(true, 256 << 10, 1 << 20);
    }

    public static Rings disabled() {
      return new Rings(false, 0, 0);
    }
  }

  private final long handshakeTimeoutMillis;
  private final Rings rings;
  private final FabricTuning tuning;
  private ScheduledThreadPoolExecutor timer;

  public ShmFabric() {
    this(defaultIoThreads(), Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS));
  }

  public ShmFabric(int ioThreads, Duration handshakeTimeout) {
    this(ioThreads, handshakeTimeout, Rings.defaults());
  }

  public ShmFabric(int ioThreads, Duration handshakeTimeout, Rings rings) {
    this(ioThreads, handshakeTimeout, rings, FabricTuning.DEFAULTS);
  }

  /**
   * With default threads and timeouts, the default rings unless {@code tuning} switches them off,
   * and its spins and direct writes.
   */
  public ShmFabric(FabricTuning tuning) {
    this(
        defaultIoThreads(),
        Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS),
        tuning.shmRings() ? Rings.defaults() : Rings.disabled(),
        tuning);
  }

  /** {@code rings} decide the rings; {@code tuning} the spins and direct writes. */
  public ShmFabric(int ioThreads, Duration handshakeTimeout, Rings rings, FabricTuning tuning) {
    super(SCHEME, ioThreads, tuning);
    this.handshakeTimeoutMillis = handshakeTimeout.toMillis();
    this.rings = rings;
    this.tuning = tuning;
  }

  /** With default threads and timeouts and these rings. */
  public ShmFabric(Rings rings) {
    this(
        defaultIoThreads(), Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS), rings);
  }

  private java.util.function.Function<io.ferrite.fabric.netty.RpcDispatcher, RingHost> ringHost(
      ServerSpec spec) {
    if (!rings.enabled()) {
      return null;
    }
    return rpc ->
        new RingServer(
            rpc,
            spec.socketDir().toAbsolutePath(),
            spec.nodeId(),
            rings.requestCapacity(),
            rings.responseCapacity(),
            tuning.shmPollerSpinNanos());
  }

  /** The thread that enforces ring calls' deadlines; started with the first connection. */
  private synchronized ScheduledThreadPoolExecutor timer() {
    if (timer == null) {
      timer =
          new ScheduledThreadPoolExecutor(
              1, new io.ferrite.fabric.NamedThreadFactory("ferrite-shm-timer", true));
      timer.setRemoveOnCancelPolicy(true);
    }
    return timer;
  }

  @Override
  public void close() {
    super.close();
    synchronized (this) {
      if (timer != null) {
        timer.shutdownNow();
      }
    }
  }

  @Override
  public FabricServer serve(ServerSpec spec) {
    if (spec.socketDir() == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "socketDir: null (expected: a directory for the socket)");
    }
    NettyServer[] self = new NettyServer[1];
    NettyServer server;
    if (NettyTransport.epoll()) {
      Path socket = spec.socketDir().toAbsolutePath().resolve("server-" + spec.nodeId() + ".sock");
      prepareSocketPath(socket);
      // Bound inside a private directory, made owner-only, then renamed into place: the socket
      // is never reachable by others, not even for the instant between bind and chmod.
      Path privateDir = privateBindDir(spec.socketDir());
      // Short names: the bind path must fit sockaddr_un (107 bytes) wherever the socket's does.
      Path bindPath = privateDir.resolve("s");
      try {
        server =
            new NettyServer(
                spec,
                serverGroup(),
                NettyTransport.UNIX,
                new DomainSocketAddress(bindPath.toString()),
                true,
                bound -> {
                  publish(bindPath, socket);
                  return SCHEME + "://" + socket;
                },
                handshakeTimeoutMillis,
                () -> {
                  untrack(self[0]);
                  deleteQuietly(socket);
                },
                ringHost(spec),
                null, // shm never leaves the host: no TLS (docs/SECURITY.md)
                tuning.directWrites());
      } finally {
        deleteQuietly(bindPath);
        deleteQuietly(privateDir);
      }
    } else {
      LOG.log(
          Level.WARNING,
          "no Unix domain sockets (epoll unavailable: {0}); shm endpoint uses tcp loopback",
          String.valueOf(NettyTransport.epollUnavailabilityCause()));
      server =
          new NettyServer(
              spec,
              serverGroup(),
              NettyTransport.TCP,
              new InetSocketAddress("127.0.0.1", 0),
              true,
              bound -> TcpFabric.address(bound).replaceFirst("^tcp:", FALLBACK_SCHEME + ":"),
              handshakeTimeoutMillis,
              () -> untrack(self[0]),
              ringHost(spec),
              null,
              tuning.directWrites());
    }
    self[0] = server;
    return track(server);
  }

  @Override
  public FabricConnection connect(String address, ConnectOptions options) {
    NettyTransport transport;
    SocketAddress remote;
    if (address.startsWith(SCHEME + ":///")) {
      if (!NettyTransport.epoll()) {
        throw new FerriteException(
            ErrorCode.UNSUPPORTED, "Unix domain sockets are unavailable (epoll) for " + address);
      }
      transport = NettyTransport.UNIX;
      remote = new DomainSocketAddress(address.substring(SCHEME.length() + 3));
    } else if (address.startsWith(FALLBACK_SCHEME + "://")) {
      transport = NettyTransport.TCP;
      remote = TcpFabric.parse(address, FALLBACK_SCHEME);
    } else {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED, "address: " + address + " (expected: shm:///path/to/socket)");
    }
    ShmConnection[] self = new ShmConnection[1];
    NettyConnection control =
        NettyConnection.connect(
            clientGroup(),
            transport,
            remote,
            address,
            options,
            c -> {
              if (self[0] != null) {
                untrack(self[0]);
              }
            },
            null,
            tuning);
    try {
      self[0] =
          new ShmConnection(
              control,
              rings.enabled(),
              timer(),
              options.connectTimeout(),
              tuning.shmWaiterSpinNanos());
    } catch (RuntimeException e) {
      control.close();
      throw e;
    }
    return track(self[0]);
  }

  /**
   * A socket file left by a server that died is removed; one that a live server answers on is a
   * conflict.
   */
  private static void prepareSocketPath(Path socket) {
    if (!Files.exists(socket)) {
      return;
    }
    try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      probe.connect(UnixDomainSocketAddress.of(socket));
      throw new FerriteException(
          ErrorCode.CONFLICT, "socket " + socket + " is in use by a live server");
    } catch (IOException stale) {
      deleteQuietly(socket);
    }
  }

  private static Path privateBindDir(Path socketDir) {
    java.security.SecureRandom random = new java.security.SecureRandom();
    for (int attempt = 0; ; attempt++) {
      // ".b" + 8 hex digits: no longer than the "server-<id>.sock" it stands in for.
      Path d = socketDir.resolve(String.format(java.util.Locale.ROOT, ".b%08x", random.nextInt()));
      try {
        return Files.createDirectory(
            d, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      } catch (java.nio.file.FileAlreadyExistsException e) {
        if (attempt > 100) {
          throw new FerriteException(
              ErrorCode.UNAVAILABLE, "cannot create a directory in " + socketDir, e);
        }
      } catch (IOException e) {
        throw new FerriteException(
            ErrorCode.UNAVAILABLE, "cannot create a directory in " + socketDir, e);
      }
    }
  }

  /** Makes the bound socket owner-only, then moves it to where clients look for it. */
  private static void publish(Path bound, Path socket) {
    try {
      Files.setPosixFilePermissions(bound, PosixFilePermissions.fromString("rw-------"));
      Files.move(bound, socket, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "cannot publish socket " + socket, e);
    }
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      LOG.log(Level.WARNING, "cannot delete " + p, e);
    }
  }

  @Override
  public String toString() {
    return "shm fabric";
  }
}
