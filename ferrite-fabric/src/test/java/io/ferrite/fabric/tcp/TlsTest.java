package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.netty.NettyConnection;
import io.ferrite.fabric.netty.Tls;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * TLS on tcp against the peers it must refuse: a client whose trust file does not hold the server's
 * certificate, a relay that terminates TLS with a certificate the client trusts (the channel
 * binding makes its proofs fail), a plaintext client at a TLS server and a TLS client at a
 * plaintext server. A relay that forwards the TLS bytes unchanged is not an attack and works.
 */
class TlsTest extends TcpTestSupport {
  private TcpFabric plainFabric;
  private final List<Proxy> proxies = new ArrayList<>();

  @Override
  TcpFabric newFabric() {
    return TlsTesting.fabric(2, Duration.ofSeconds(2));
  }

  @AfterEach
  void stopProxies() throws Exception {
    for (Proxy p : proxies) {
      p.close();
    }
    if (plainFabric != null) {
      plainFabric.close();
    }
    for (Proxy p : proxies) {
      p.assertNoErrors();
    }
  }

  private static Path cert(Path dir) {
    return dir.resolve(TlsFiles.CERT);
  }

  private static Path key(Path dir) {
    return dir.resolve(TlsFiles.KEY);
  }

  private static ConnectOptions quick(io.ferrite.fabric.Credentials c) {
    return new ConnectOptions(c, Duration.ofSeconds(5), Duration.ofSeconds(10));
  }

  @Test
  void readsWritesAndCallsOverTlsWithoutLanes() throws Exception {
    start(RpcHandler.none(), 1, 16);
    FabricConnection c = connect();
    byte[] data = new byte[300_000];
    random.nextBytes(data);
    c.writeSync(ref, 512, ByteBuffer.wrap(data));
    for (int i = 0; i < 20; i++) {
      ByteBuffer back = ByteBuffer.allocateDirect(data.length);
      c.readSync(ref, 512, back);
      byte[] got = new byte[data.length];
      back.get(0, got);
      assertArrayEquals(data, got, where());
      ByteBuffer small = ByteBuffer.allocate(64);
      c.readSync(ref, 512 + i, small);
      assertEquals(data[i], small.get(0), where());
    }
    // Under TLS synchronous reads never open a lane (a plain socket beside the TLS one).
    assertTrue(!((NettyConnection) c).hasLanes(), where());
    assertEquals(0, ((NettyConnection) c).lanes(), where());
    assertEquals(1, server.connections(), where());
  }

  @Test
  void aClientThatDoesNotTrustTheServerCertificateIsRefusedSayingWhy() throws Exception {
    start(RpcHandler.none(), 1, 16);
    Path wrong = cert(TlsTesting.other());
    try (TcpFabric f = new TcpFabric(1, Duration.ofSeconds(2), Tls.fromPem(null, null, wrong))) {
      FerriteException e =
          assertThrows(
              FerriteException.class, () -> f.connect(server.address(), quick(credentials)));
      assertEquals(ErrorCode.AUTH_FAILED, e.code(), e.toString());
      assertTrue(
          e.getMessage().contains("certificate of the server at " + server.address())
              && e.getMessage().contains("not accepted by the trust file " + wrong),
          e.getMessage());
    }
    assertStillServes();
  }

  @Test
  void aRelayTerminatingTlsWithACertificateTheClientTrustsFailsTheProof() throws Exception {
    start(RpcHandler.none(), 1, 16);
    Path relayPair = TlsTesting.other();
    // The client trusts both the server's certificate and the relay's: TLS alone would let the
    // relay read and change everything. Only the channel binding in the proofs stops it.
    Path trust = dir.resolve("both.pem");
    Files.writeString(
        trust,
        Files.readString(cert(TlsTesting.server())) + Files.readString(cert(relayPair)),
        StandardCharsets.US_ASCII);
    Proxy relay = proxy(new TlsTerminatingRelay(relayPair, cert(TlsTesting.server())));
    try (TcpFabric f = new TcpFabric(1, Duration.ofSeconds(2), Tls.fromPem(null, null, trust))) {
      FerriteException e =
          assertThrows(
              FerriteException.class, () -> f.connect(relay.address(), quick(credentials)));
      assertEquals(ErrorCode.AUTH_FAILED, e.code(), e.toString());
      assertTrue(e.getMessage().contains("failed to prove the cluster secret"), e.getMessage());
      // The same trust, straight to the server: works.
      try (FabricConnection c = f.connect(server.address(), quick(credentials))) {
        assertEquals(3, c.remoteId());
      }
    }
    assertTrue(relay.relayed() > 0, "the relay carried the TLS sessions");
    assertStillServes();
  }

  @Test
  void aRelayForwardingTheTlsBytesUnchangedWorks() throws Exception {
    start(RpcHandler.none(), 1, 16);
    Proxy relay = proxy(null);
    FabricConnection c = closeLater(fabric.connect(relay.address(), quick(credentials)));
    byte[] data = new byte[70_000];
    random.nextBytes(data);
    c.writeSync(ref, 0, ByteBuffer.wrap(data));
    ByteBuffer back = ByteBuffer.allocate(data.length);
    c.readSync(ref, 0, back);
    assertArrayEquals(data, back.array(), where());
    assertTrue(relay.relayed() > data.length, "through the relay");
  }

  @Test
  void aPlaintextClientAtATlsServerIsToldTlsIsRequired() throws Exception {
    start(RpcHandler.none(), 1, 16);
    plainFabric = new TcpFabric(1, Duration.ofSeconds(2));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> plainFabric.connect(server.address(), quick(credentials)));
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), e.toString());
    assertTrue(e.getMessage().contains("requires TLS"), e.getMessage());
    assertStillServes();
  }

  @Test
  void aTlsClientAtAPlaintextServerFailsTheTlsHandshakeSayingSo() throws Exception {
    plainFabric = new TcpFabric(1, Duration.ofSeconds(2));
    io.ferrite.fabric.FabricServer plain =
        plainFabric.serve(
            io.ferrite.fabric.ServerSpec.loopback(
                4, credentials, new io.ferrite.fabric.RegionTable(), RpcHandler.none(), null));
    start(RpcHandler.none(), 1, 16);
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> fabric.connect(plain.address(), quick(credentials)));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.toString());
    assertTrue(e.getMessage().contains("TLS handshake with " + plain.address()), e.getMessage());
    // The plaintext server still serves plaintext clients.
    try (FabricConnection c = plainFabric.connect(plain.address(), quick(credentials))) {
      assertEquals(4, c.remoteId());
      assertTrue(((NettyConnection) c).hasLanes(), "plain tcp keeps its lanes");
    }
  }

  // ---- relays

  private Proxy proxy(TlsTerminatingRelay terminating) throws IOException {
    InetSocketAddress target = RawClient.addressOf(server.address());
    Proxy p = new Proxy(target, terminating);
    proxies.add(p);
    return p;
  }

  /** A relay's TLS ends: its own certificate towards the client, a TLS client to the server. */
  private static final class TlsTerminatingRelay {
    final SSLContext asServer;
    final SSLContext asClient;

    TlsTerminatingRelay(Path ownPair, Path serverCert) throws IOException {
      try {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        Certificate own;
        try (InputStream in = Files.newInputStream(cert(ownPair))) {
          own = cf.generateCertificate(in);
        }
        String pem = Files.readString(key(ownPair), StandardCharsets.US_ASCII);
        byte[] der =
            Base64.getMimeDecoder()
                .decode(pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", ""));
        PrivateKey pk = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("relay", pk, new char[0], new Certificate[] {own});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance("SunX509");
        kmf.init(ks, new char[0]);
        asServer = SSLContext.getInstance("TLSv1.3");
        asServer.init(kmf.getKeyManagers(), null, null);
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        try (InputStream in = Files.newInputStream(serverCert)) {
          ts.setCertificateEntry("server", cf.generateCertificate(in));
        }
        TrustManagerFactory tmf =
            TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ts);
        asClient = SSLContext.getInstance("TLSv1.3");
        asClient.init(null, tmf.getTrustManagers(), null);
      } catch (GeneralSecurityException e) {
        throw new IOException(e);
      }
    }
  }

  /**
   * A relay on the path: forwards bytes both ways, either as they are (a TCP proxy) or after
   * terminating the client's TLS and opening its own to the server (a man in the middle who can
   * read and change the cluster handshake). Errors other than a socket's end fail the test.
   */
  private static final class Proxy {
    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final TlsTerminatingRelay tls;
    private final List<Socket> sockets = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    private final java.util.concurrent.atomic.AtomicLong relayed =
        new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean closed;

    Proxy(InetSocketAddress target, TlsTerminatingRelay tls) throws IOException {
      this.target = target;
      this.tls = tls;
      InetAddress lo = InetAddress.getLoopbackAddress();
      listener =
          tls == null
              ? new ServerSocket(0, 50, lo)
              : tls.asServer.getServerSocketFactory().createServerSocket(0, 50, lo);
      start("ferrite-test-relay-accept", this::accept);
    }

    String address() {
      return "tcp://127.0.0.1:" + listener.getLocalPort();
    }

    long relayed() {
      return relayed.get();
    }

    private synchronized void start(String name, Runnable r) {
      Thread t =
          new Thread(
              () -> {
                try {
                  r.run();
                } catch (Throwable e) { // NOPMD: recorded, fails the test in assertNoErrors
                  errors.add(e);
                }
              },
              name);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }

    private synchronized void keep(Socket s) throws IOException {
      if (closed) {
        s.close();
      }
      sockets.add(s);
    }

    private void accept() {
      while (!closed) {
        Socket in;
        try {
          in = listener.accept();
        } catch (IOException e) {
          if (closed) {
            return;
          }
          throw new AssertionError("relay accept failed", e);
        }
        try {
          keep(in);
          Socket out;
          if (tls == null) {
            out = new Socket(target.getAddress(), target.getPort());
          } else {
            ((SSLSocket) in).startHandshake();
            SSLSocket s =
                (SSLSocket)
                    tls.asClient
                        .getSocketFactory()
                        .createSocket(target.getAddress(), target.getPort());
            s.startHandshake();
            out = s;
          }
          keep(out);
          start("ferrite-test-relay-up", () -> pump(in, out));
          start("ferrite-test-relay-down", () -> pump(out, in));
        } catch (IOException e) {
          if (!closed) {
            throw new AssertionError("relay could not open its connections", e);
          }
        }
      }
    }

    private void pump(Socket from, Socket to) {
      byte[] buf = new byte[64 << 10];
      try (InputStream in = from.getInputStream();
          OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          out.write(buf, 0, n);
          out.flush();
          relayed.addAndGet(n);
        }
      } catch (SocketException e) {
        // one end closed: the other follows below
      } catch (IOException e) {
        if (!closed && !(e instanceof javax.net.ssl.SSLException)) {
          throw new AssertionError("relay failed", e);
        }
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }

    private static void closeQuietly(Socket s) {
      try {
        s.close();
      } catch (IOException e) {
        // closing a relay leg: nothing left to do
      }
    }

    void close() throws IOException, InterruptedException {
      List<Socket> all;
      List<Thread> ts;
      synchronized (this) {
        closed = true;
        all = new ArrayList<>(sockets);
        ts = new ArrayList<>(threads);
      }
      listener.close();
      for (Socket s : all) {
        closeQuietly(s);
      }
      for (Thread t : ts) {
        t.join(5000);
        assertTrue(!t.isAlive(), t.getName() + " stopped");
      }
    }

    void assertNoErrors() {
      Throwable e = errors.peek();
      if (e != null) {
        throw new AssertionError("relay thread failed", e);
      }
    }
  }
}
