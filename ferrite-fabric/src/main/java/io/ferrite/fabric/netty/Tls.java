package io.ferrite.fabric.netty;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RateLimitedLog;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.UnixChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.util.List;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * TLS 1.3 for the tcp fabric, with the JDK's provider (no native library): Netty's {@link
 * SslHandler} at the head of each pipeline, certificates from PEM files.
 *
 * <p>A server presents its certificate chain ({@code cert}, with the PKCS#8 {@code key}); a client
 * verifies it against {@code trust} (a CA or the server's own certificate, PEM), including the host
 * name or IP address it dialled. Servers do not ask for client certificates: the cluster
 * handshake's HMAC proves the client, and it is bound to this TLS session by {@link
 * #serverEndPoint} (RFC 5929 tls-server-end-point), so a peer that terminates TLS with another
 * certificate cannot relay the proofs.
 *
 * <p><b>Fast paths.</b> Several tcp paths read or write the socket beneath Netty's pipeline, which
 * TLS cannot allow (the bytes there are ciphertext): caller-thread writes through a duplicated
 * descriptor ({@code ClientWriter}, {@code ServerWriter}), the client's direct reads of large READ
 * bodies into the caller's buffer ({@code ClientHandler}), and the blocking lanes (plain sockets of
 * their own, {@code Lanes}). Whether they may run is decided here alone: {@link #rawSocket} gives
 * the descriptor to the first three, {@link #on} turns the lanes off; under TLS every byte goes
 * through the pipeline.
 */
public final class Tls {
  private static final System.Logger LOG = System.getLogger(Tls.class.getName());

  private static final String[] PROTOCOLS = {"TLSv1.3"};

  private final SslContext server;
  private final SslContext client;
  private final Path trust;

  private Tls(SslContext server, SslContext client, Path trust) {
    this.server = server;
    this.client = client;
    this.trust = trust;
  }

  /**
   * TLS from PEM files.
   *
   * @param cert the certificate chain this process presents as a server (null: client only)
   * @param key the unencrypted PKCS#8 private key of {@code cert} (null with {@code cert})
   * @param trust the certificates a client accepts a server's chain from (null: server only)
   * @throws FerriteException {@link ErrorCode#INVALID_ARGUMENT} naming the file that cannot be used
   */
  public static Tls fromPem(Path cert, Path key, Path trust) {
    if ((cert == null) != (key == null)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "TLS: a certificate needs its key (cert: " + cert + ", key: " + key + ")");
    }
    if (cert == null && trust == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "TLS: neither a certificate nor a trust file");
    }
    SslContext server = null;
    SslContext client = null;
    if (cert != null) {
      readable(cert, "certificate");
      readable(key, "key");
      try {
        server =
            SslContextBuilder.forServer(cert.toFile(), key.toFile())
                .sslProvider(SslProvider.JDK)
                .protocols(PROTOCOLS)
                .build();
      } catch (SSLException | IllegalArgumentException e) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "TLS: cannot use certificate " + cert + " with key " + key + ": " + e.getMessage(),
            e);
      }
    }
    if (trust != null) {
      readable(trust, "trust");
      try {
        client =
            SslContextBuilder.forClient()
                .sslProvider(SslProvider.JDK)
                .protocols(PROTOCOLS)
                .trustManager(trust.toFile())
                .build();
      } catch (SSLException | IllegalArgumentException e) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "TLS: cannot use trust file " + trust + ": " + e.getMessage(),
            e);
      }
    }
    return new Tls(server, client, trust);
  }

  private static void readable(Path p, String what) {
    if (!Files.isReadable(p)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "TLS: " + what + " file " + p + " is not readable");
    }
  }

  /** Throws unless this can serve: a server needs a certificate and its key. */
  void requireServer() {
    if (server == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "TLS: a server needs a certificate and key (tls.cert, tls.key)");
    }
  }

  /** The handler a server puts first in an accepted channel's pipeline. */
  ByteToMessageDecoder serverGate(String serverAddress, RateLimitedLog refusals) {
    requireServer();
    return new Gate(server, serverAddress, refusals);
  }

  /** An SSL handler for a client channel to {@code remote} (checks the host name it dialled). */
  SslHandler clientHandler(Channel ch, InetSocketAddress remote) {
    if (client == null) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, "TLS: a client needs a trust file");
    }
    SslHandler h = client.newHandler(ch.alloc(), remote.getHostString(), remote.getPort());
    SSLEngine engine = h.engine();
    SSLParameters p = engine.getSSLParameters();
    p.setEndpointIdentificationAlgorithm("HTTPS");
    engine.setSSLParameters(p);
    return h;
  }

  /**
   * The failure of a client's TLS handshake with {@code address}, saying what went wrong: a
   * certificate the trust file does not accept ({@link ErrorCode#AUTH_FAILED}, not retryable), or a
   * peer that closed or spoke something else ({@link ErrorCode#UNAVAILABLE}).
   */
  FerriteException handshakeFailure(String address, Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof CertificateException) {
        return new FerriteException(
            ErrorCode.AUTH_FAILED,
            "TLS: the certificate of the server at "
                + address
                + " is not accepted by the trust file "
                + trust
                + ": "
                + t.getMessage(),
            cause);
      }
    }
    String hint =
        cause instanceof SSLHandshakeException
            ? ""
            : " (is the server using TLS? a server without tls.enabled closes on a TLS hello)";
    return new FerriteException(
        ErrorCode.UNAVAILABLE, "TLS handshake with " + address + " failed: " + cause + hint, cause);
  }

  /**
   * The socket's descriptor for the paths that bypass Netty's pipeline (direct reads and writes,
   * duplicated descriptors), or null when they must not run: not an epoll channel, or TLS. The one
   * place that decides it for every fast path of a channel.
   */
  static FileDescriptor rawSocket(Channel ch) {
    if (!(ch instanceof UnixChannel u) || on(ch)) {
      return null;
    }
    return u.fd();
  }

  /** Whether {@code ch} runs TLS (its pipeline has an SSL handler, or a gate that adds one). */
  static boolean on(Channel ch) {
    return ch.pipeline().get(SslHandler.class) != null || ch.pipeline().get(Gate.class) != null;
  }

  /**
   * The channel binding of RFC 5929 (tls-server-end-point): SHA-256 of the server's certificate as
   * this end sees it (its own on a server, the peer's on a client); empty without TLS. A relay that
   * terminates TLS shows the client another certificate than the server holds, so the two ends bind
   * their proofs to different bytes and the handshake fails. Called after the TLS handshake.
   */
  static byte[] serverEndPoint(Channel ch, boolean isServer) {
    SslHandler h = ch.pipeline().get(SslHandler.class);
    if (h == null) {
      return Handshake.NO_BINDING;
    }
    SSLSession s = h.engine().getSession();
    try {
      Certificate[] chain = isServer ? s.getLocalCertificates() : s.getPeerCertificates();
      if (chain == null || chain.length == 0) {
        throw new FerriteException(ErrorCode.AUTH_FAILED, "TLS session without a certificate");
      }
      return MessageDigest.getInstance("SHA-256").digest(chain[0].getEncoded());
    } catch (SSLPeerUnverifiedException e) {
      throw new FerriteException(ErrorCode.AUTH_FAILED, "TLS peer is not verified", e);
    } catch (GeneralSecurityException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "cannot hash the TLS certificate", e);
    }
  }

  /**
   * A server's first handler: replaces itself with an {@link SslHandler} if the peer's first bytes
   * are a TLS record, and otherwise answers a plaintext peer with an error frame it can read (an
   * AUTH_FAILED answer to its HELLO, saying TLS is required) and closes, so a client with TLS off
   * gets a clear message rather than a closed socket. Other connections are not affected.
   */
  private static final class Gate extends ByteToMessageDecoder {
    private final SslContext context;
    private final String serverAddress;
    private final RateLimitedLog refusals;

    Gate(SslContext context, String serverAddress, RateLimitedLog refusals) {
      this.context = context;
      this.serverAddress = serverAddress;
      this.refusals = refusals;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
      if (in.readableBytes() < 5) {
        return; // SslHandler.isEncrypted needs a record header
      }
      if (SslHandler.isEncrypted(in, false)) {
        ctx.pipeline().replace(this, "tls", context.newHandler(ctx.alloc()));
        return; // the buffered bytes go on to the SSL handler
      }
      String peer = String.valueOf(ctx.channel().remoteAddress());
      refusals.log(
          ctx.executor(),
          "plaintext on a TLS endpoint",
          null,
          "refusing plaintext connection from {0} to {1}: TLS is required",
          peer,
          serverAddress);
      in.skipBytes(in.readableBytes());
      ByteBuf err =
          Wire.error(
              ctx.alloc(),
              io.ferrite.fabric.Frames.TYPE_HELLO,
              0,
              ErrorCode.AUTH_FAILED,
              "server at " + serverAddress + " requires TLS (set tls.enabled and tls.trust)");
      ctx.writeAndFlush(err).addListener(ChannelFutureListener.CLOSE);
      ctx.channel().config().setAutoRead(false);
    }
  }
}
