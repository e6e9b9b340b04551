package io.ferrite.kernel.ops.console;

import com.sun.net.httpserver.HttpExchange;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.ops.OpsServer;
import io.ferrite.kernel.ops.SuppressForbidden;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The master's read-only web console, on its {@link OpsServer} (so behind the same loopback or
 * secret rule as {@code /metrics}): one self-contained page at {@code /} (inline CSS and JS, no
 * network; charts drawn on a canvas) that fetches, every second:
 *
 * <ul>
 *   <li>{@code /api/status}: {@code {"master":{"addresses":{fabric: address}},"status":<the STATUS
 *       RPC's ClusterStatus.toJson()>}}: the very numbers {@code ferrite status} prints;
 *   <li>{@code /api/faces}: {@code {face: describe()}} of every installed master extension;
 *   <li>{@code /api/rates}: the last {@link LoadBoard#SAMPLES} seconds of operation rates and RPC
 *       latency ({@link LoadBoard#json}).
 * </ul>
 *
 * <p>One thread samples the rates once a second; the HTTP threads are the {@link OpsServer}'s.
 */
@SuppressForbidden(reason = "com.sun.net.httpserver is the JDK's supported, exported HTTP server")
public final class Console implements AutoCloseable {
  private static final String PAGE = "console.html";

  /**
   * What the console shows, read on demand.
   *
   * @param status the STATUS RPC's answer
   * @param faces each installed face's {@code describe()}, by face name
   * @param masterAddresses the master's endpoint per fabric
   */
  public record Source(
      Supplier<ClusterStatus> status,
      Supplier<Map<String, Map<String, Object>>> faces,
      Supplier<Map<String, String>> masterAddresses) {}

  private final LoadBoard board;
  private final ScheduledThreadPoolExecutor sampler;
  private volatile boolean closed;

  private Console(LoadBoard board, ScheduledThreadPoolExecutor sampler) {
    this.board = board;
    this.sampler = sampler;
  }

  /**
   * Routes the console's page and API on {@code ops} and starts sampling {@code board} every
   * second.
   */
  public static Console start(OpsServer ops, Source source, LoadBoard board) {
    byte[] page = page();
    Console c = new Console(board, Threads.scheduler("ferrite-console-sampler"));
    ops.route(
        "/",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          if (!path.equals("/") && !path.equals("/index.html")) {
            OpsServer.send(exchange, 404, "text/plain", ("no " + path + "\n").getBytes(UTF8));
            return;
          }
          OpsServer.send(exchange, 200, "text/html; charset=utf-8", page);
        });
    ops.route("/api/status", exchange -> json(exchange, statusJson(source)));
    ops.route("/api/faces", exchange -> json(exchange, Json.write(source.faces().get())));
    ops.route("/api/rates", exchange -> json(exchange, board.json()));
    c.sampler.scheduleAtFixedRate(c::sample, 1, 1, TimeUnit.SECONDS);
    return c;
  }

  private static final java.nio.charset.Charset UTF8 = StandardCharsets.UTF_8;

  /** {@code /api/status}'s body. */
  static String statusJson(Source source) {
    Map<String, Object> master = new LinkedHashMap<>();
    master.put("addresses", new java.util.TreeMap<>(source.masterAddresses().get()));
    StringBuilder sb = new StringBuilder("{\"master\":");
    Json.write(sb, master);
    sb.append(",\"status\":").append(source.status().get().toJson()).append('}');
    return sb.toString();
  }

  private static void json(HttpExchange exchange, String body) throws IOException {
    OpsServer.send(exchange, 200, "application/json", body.getBytes(UTF8));
  }

  private void sample() {
    try {
      board.sample();
    } catch (RuntimeException e) {
      // A failed sample leaves a gap in the chart; the next second tries again.
      System.getLogger(Console.class.getName())
          .log(System.Logger.Level.WARNING, "console sample failed", e);
    }
  }

  private static byte[] page() {
    try (InputStream in = Console.class.getResourceAsStream(PAGE)) {
      if (in == null) {
        throw new IllegalStateException("console page " + PAGE + " missing from the jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the console page", e);
    }
  }

  /** The rates it shows. */
  public LoadBoard board() {
    return board;
  }

  /** Stops sampling; the routes die with the {@link OpsServer}. Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    sampler.shutdownNow();
  }
}
