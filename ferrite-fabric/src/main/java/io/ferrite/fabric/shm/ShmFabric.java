package io.ferrite.fabric.shm;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.NettyConnection;
import io.ferrite.fabric.netty.NettyFabric;
import io.ferrite.fabric.netty.NettyServer;
import io.ferrite.fabric.netty.NettyTransport;
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

/**
 * The same-host fabric: the client maps a server's region files itself, so one-sided ops are plain
 * memory accesses that cost the server's CPU nothing (the CPU bypass of RDMA, for real). The
 * server's endpoint is a Unix domain socket in {@link ServerSpec#socketDir()} speaking the tcp
 * fabric's frames and handshake; over it the client authenticates, asks for each region's file once
 * (MAP, which checks the rkey) and makes its RPCs.
 *
 * <p>Addresses are {@code shm:///abs/path/server-<nodeId>.sock}. Where Netty's epoll transport is
 * unavailable (no Unix sockets), the endpoint falls back to tcp loopback and says so in its
 * address: {@code shm+tcp://127.0.0.1:port}; regions are still mapped by the client.
 */
public final class ShmFabric extends NettyFabric {
  private static final System.Logger LOG = System.getLogger(ShmFabric.class.getName());

  static final String SCHEME = "shm";
  static final String FALLBACK_SCHEME = "shm+tcp";

  private final long handshakeTimeoutMillis;

  public ShmFabric() {
    this(defaultIoThreads(), Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS));
  }

  public ShmFabric(int ioThreads, Duration handshakeTimeout) {
    super(SCHEME, ioThreads);
    this.handshakeTimeoutMillis = handshakeTimeout.toMillis();
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
      Path bindPath = privateDir.resolve("s.sock");
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
                });
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
              () -> untrack(self[0]));
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
            clientGroup(), transport, remote, address, options, c -> untrack(self[0]));
    self[0] = new ShmConnection(control);
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
    try {
      return Files.createTempDirectory(
          socketDir,
          ".bind-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (IOException e) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "cannot create a directory in " + socketDir, e);
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
