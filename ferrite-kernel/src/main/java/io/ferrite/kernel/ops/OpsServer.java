package io.ferrite.kernel.ops;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.config.Threads;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A process's read-only HTTP endpoint: {@code /metrics} (Prometheus text format), {@code /health},
 * and whatever else the owner {@linkplain #route routes} (the master's console). Built on the JDK's
 * {@code com.sun.net.httpserver}, served by two named threads: a scrape a second costs little.
 *
 * <p><b>Who may read.</b> Bound to a loopback address (the default, {@code metrics.host =
 * 127.0.0.1}) it answers anyone on the host, like the shm fabric's files do. Bound elsewhere it
 * answers only requests that prove the cluster secret: {@code Authorization: Bearer <hex>} (what
 * Prometheus's {@code authorization} setting sends), a {@code ferrite_token} cookie, or a {@code
 * token} query parameter (which sets the cookie, so a browser asks once), where {@code <hex>} is
 * the CLIENT-role secret ({@code client.secret}) or the root. Everything is read-only: any method
 * but GET and HEAD gets 405.
 */
@SuppressForbidden(reason = "com.sun.net.httpserver is the JDK's supported, exported HTTP server")
public final class OpsServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(OpsServer.class.getName());

  /** The Prometheus text exposition format's content type. */
  public static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private static final String COOKIE = "ferrite_token";

  private final HttpServer http;
  private final ThreadPoolExecutor executor;
  private final List<byte[]> tokens;
  private final boolean open;
  private volatile boolean closed;

  private OpsServer(
      HttpServer http, ThreadPoolExecutor executor, List<byte[]> tokens, boolean forceSecret) {
    this.http = http;
    this.executor = executor;
    this.tokens = tokens;
    this.open = !forceSecret && http.getAddress().getAddress().isLoopbackAddress();
  }

  /**
   * Binds {@code host:port} (0: any free port) and serves {@code /metrics} from {@code metrics} and
   * {@code /health}. Off loopback, requests must carry a secret {@code credentials} can derive the
   * CLIENT role's from.
   *
   * @throws UncheckedIOException naming the address when it cannot be bound
   */
  public static OpsServer start(
      String host, int port, Metrics metrics, Credentials credentials, String name) {
    return start(host, port, metrics, credentials, name, false);
  }

  /**
   * As {@link #start(String, int, Metrics, Credentials, String)}; {@code forceSecret} asks for the
   * secret even on loopback, so that tests check the off-loopback rule without binding off it.
   */
  static OpsServer start(
      String host,
      int port,
      Metrics metrics,
      Credentials credentials,
      String name,
      boolean forceSecret) {
    HttpServer http;
    try {
      http = HttpServer.create(new InetSocketAddress(InetAddress.getByName(host), port), 64);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot serve metrics on " + host + ":" + port + " (metrics.port in use?)", e);
    }
    ThreadPoolExecutor ex =
        new ThreadPoolExecutor(
            2,
            2,
            30,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(256),
            Threads.named("ferrite-http-" + name));
    ex.allowCoreThreadTimeOut(true);
    http.setExecutor(ex);
    List<byte[]> tokens = new ArrayList<>();
    if (credentials.canDerive(Role.CLIENT)) {
      tokens.add(hex(credentials.secretFor(Role.CLIENT)));
    }
    if (credentials.role() == Role.ADMIN) {
      tokens.add(hex(credentials.secret()));
    }
    OpsServer s = new OpsServer(http, ex, tokens, forceSecret);
    s.route(
        "/metrics",
        exchange -> send(exchange, 200, PROMETHEUS_TYPE, metrics.scrape().getBytes(UTF8)));
    s.route("/health", exchange -> send(exchange, 200, "text/plain", "ok\n".getBytes(UTF8)));
    http.start();
    LOG.log(System.Logger.Level.INFO, "{0} serving metrics at {1}metrics", name, s.url());
    return s;
  }

  private static final java.nio.charset.Charset UTF8 = StandardCharsets.UTF_8;

  private static byte[] hex(byte[] secret) {
    return HexFormat.of().formatHex(secret).getBytes(UTF8);
  }

  /**
   * Serves {@code path} (and everything under it that no longer route claims) with {@code handler},
   * after the read-only and secret checks. A handler that throws answers 500 with the message; the
   * exchange is always closed.
   */
  public void route(String path, HttpHandler handler) {
    http.createContext(path, exchange -> guarded(exchange, handler));
  }

  private void guarded(HttpExchange exchange, HttpHandler handler) {
    try (exchange) {
      String method = exchange.getRequestMethod();
      if (!method.equals("GET") && !method.equals("HEAD")) {
        exchange.getResponseHeaders().set("Allow", "GET, HEAD");
        send(exchange, 405, "text/plain", "read-only: GET or HEAD\n".getBytes(UTF8));
        return;
      }
      if (!open && !authorized(exchange)) {
        exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"ferrite\"");
        send(
            exchange,
            401,
            "text/plain",
            ("the cluster secret is required off loopback: Authorization: Bearer <hex of"
                    + " client.secret>, or ?token=<hex> once in a browser\n")
                .getBytes(UTF8));
        return;
      }
      handler.handle(exchange);
    } catch (IOException | RuntimeException e) {
      // The peer went away mid-answer, or the handler failed: say so if the answer has not started.
      LOG.log(System.Logger.Level.DEBUG, "http " + exchange.getRequestURI() + " failed", e);
      try {
        if (exchange.getResponseCode() == -1) {
          send(exchange, 500, "text/plain", (e + "\n").getBytes(UTF8));
        }
      } catch (IOException | RuntimeException ignored) {
        // Nothing more to tell a peer that is gone.
      }
    }
  }

  private boolean authorized(HttpExchange exchange) {
    String auth = exchange.getRequestHeaders().getFirst("Authorization");
    if (auth != null
        && auth.regionMatches(true, 0, "Bearer ", 0, 7)
        && matches(auth.substring(7))) {
      return true;
    }
    for (String cookies : exchange.getRequestHeaders().getOrDefault("Cookie", List.of())) {
      for (String c : cookies.split(";")) {
        String t = c.trim();
        if (t.startsWith(COOKIE + "=") && matches(t.substring(COOKIE.length() + 1))) {
          return true;
        }
      }
    }
    String query = exchange.getRequestURI().getRawQuery();
    if (query != null) {
      for (String p : query.split("&")) {
        if (p.startsWith("token=") && matches(p.substring(6))) {
          exchange
              .getResponseHeaders()
              .add("Set-Cookie", COOKIE + "=" + p.substring(6) + "; HttpOnly; SameSite=Strict");
          return true;
        }
      }
    }
    return false;
  }

  private boolean matches(String presented) {
    byte[] p = presented.trim().toLowerCase(java.util.Locale.ROOT).getBytes(UTF8);
    boolean ok = false;
    for (byte[] t : tokens) {
      ok |= MessageDigest.isEqual(t, p); // constant time per token
    }
    return ok;
  }

  /** Answers {@code status} with {@code body} (nothing for HEAD). */
  public static void send(HttpExchange exchange, int status, String contentType, byte[] body)
      throws IOException {
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head ? -1 : (body.length == 0 ? -1 : body.length));
    if (!head && body.length > 0) {
      exchange.getResponseBody().write(body);
    }
  }

  /** The base URL, e.g. {@code http://127.0.0.1:9100/}. */
  public URI url() {
    InetSocketAddress a = http.getAddress();
    String host = a.getAddress().getHostAddress();
    if (host.indexOf(':') >= 0) {
      host = "[" + host + "]";
    }
    return URI.create("http://" + host + ":" + a.getPort() + "/");
  }

  /** Whether requests need the secret (bound off loopback). */
  public boolean requiresSecret() {
    return !open;
  }

  /** Stops serving; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    http.stop(0);
    executor.shutdownNow();
  }
}
