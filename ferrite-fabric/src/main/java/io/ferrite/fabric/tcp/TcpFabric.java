package io.ferrite.fabric.tcp;

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
import io.ferrite.fabric.netty.Tls;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;

/**
 * The fabric for any host: frames over TCP (Netty; epoll when available). One-sided ops are served
 * by the server's I/O threads alone (the soft NIC); RPCs inline or by its dispatch threads.
 *
 * <p>Addresses are {@code tcp://host:port} ({@code tcp://[::1]:port} for IPv6).
 *
 * <p>With {@link Tls}, every server and connection of the fabric runs TLS 1.3 and the cluster
 * handshake is bound to the TLS session; the paths that bypass Netty's pipeline are then off (see
 * {@link Tls}).
 */
public final class TcpFabric extends NettyFabric {
  private final long handshakeTimeoutMillis;
  private final Tls tls;

  public TcpFabric() {
    this(defaultIoThreads(), Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS));
  }

  /** A tcp fabric whose servers and connections all run TLS ({@code tls} null: none do). */
  public TcpFabric(Tls tls) {
    this(defaultIoThreads(), Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS), tls);
  }

  /**
   * @param ioThreads I/O threads of each event loop group (servers', clients')
   * @param handshakeTimeout how long a server waits for an accepted peer to authenticate
   */
  public TcpFabric(int ioThreads, Duration handshakeTimeout) {
    this(ioThreads, handshakeTimeout, null);
  }

  /**
   * @param ioThreads I/O threads of each event loop group (servers', clients')
   * @param handshakeTimeout how long a server waits for an accepted peer to authenticate
   * @param tls TLS for every server and connection of this fabric, or null for none
   */
  public TcpFabric(int ioThreads, Duration handshakeTimeout, Tls tls) {
    this(ioThreads, handshakeTimeout, tls, FabricTuning.DEFAULTS);
  }

  /** With TLS (or null) and the {@code tuning} switches (lanes, direct writes). */
  public TcpFabric(Tls tls, FabricTuning tuning) {
    this(
        defaultIoThreads(),
        Duration.ofMillis(NettyServer.DEFAULT_HANDSHAKE_TIMEOUT_MILLIS),
        tls,
        tuning);
  }

  /**
   * @param ioThreads I/O threads of each event loop group (servers', clients')
   * @param handshakeTimeout how long a server waits for an accepted peer to authenticate
   * @param tls TLS for every server and connection of this fabric, or null for none
   * @param tuning lanes and direct writes of its connections and servers
   */
  public TcpFabric(int ioThreads, Duration handshakeTimeout, Tls tls, FabricTuning tuning) {
    super("tcp", ioThreads, tuning);
    this.handshakeTimeoutMillis = handshakeTimeout.toMillis();
    this.tls = tls;
  }

  @Override
  protected long serverLoopSpinNanos() {
    return tuning().tcpPollSpinNanos();
  }

  /** Whether this fabric runs TLS. */
  public boolean tls() {
    return tls != null;
  }

  @Override
  public FabricServer serve(ServerSpec spec) {
    NettyServer[] self = new NettyServer[1];
    NettyServer server =
        new NettyServer(
            spec,
            serverGroup(),
            NettyTransport.TCP,
            new InetSocketAddress(spec.host(), spec.port()),
            false,
            TcpFabric::address,
            handshakeTimeoutMillis,
            () -> untrack(self[0]),
            null,
            tls,
            tuning().directWrites());
    self[0] = server;
    return track(server);
  }

  @Override
  public FabricConnection connect(String address, ConnectOptions options) {
    SocketAddress remote = parse(address, "tcp");
    return track(
        NettyConnection.connect(
            clientGroup(),
            NettyTransport.TCP,
            remote,
            address,
            options,
            this::untrack,
            tls,
            tuning()));
  }

  /** {@code tcp://host:port} of a bound socket. */
  public static String address(SocketAddress bound) {
    InetSocketAddress a = (InetSocketAddress) bound;
    String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
    if (host.indexOf(':') >= 0) {
      host = "[" + host + "]";
    }
    return "tcp://" + host + ":" + a.getPort();
  }

  /** Parses {@code scheme://host:port}. */
  public static InetSocketAddress parse(String address, String scheme) {
    try {
      URI uri = new URI(address);
      if (!scheme.equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0) {
        throw new FerriteException(
            ErrorCode.UNSUPPORTED,
            "address: " + address + " (expected: " + scheme + "://host:port)");
      }
      return new InetSocketAddress(uri.getHost(), uri.getPort());
    } catch (URISyntaxException e) {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED, "address: " + address + " (expected: " + scheme + "://host:port)");
    }
  }

  @Override
  public String toString() {
    return tls == null ? "tcp fabric" : "tcp fabric (TLS)";
  }
}
