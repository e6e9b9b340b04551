package io.ferrite.kernel.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.testing.PrometheusText;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Tag;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The HTTP endpoint's rules: read-only, 404 off its routes, the secret off loopback. */
class OpsServerTest {
  private static final Credentials ROOT =
      new Credentials("ops-test", "0123456789abcdef-ops-secret".getBytes(StandardCharsets.UTF_8));

  private final HttpClient http = HttpClient.newHttpClient();
  private final Metrics metrics = new Metrics(List.of(Tag.of("process", "test")));
  private OpsServer server;

  @AfterEach
  void close() {
    if (server != null) {
      server.close();
    }
    metrics.close();
  }

  private HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpRequest.Builder get(String path) {
    return HttpRequest.newBuilder(server.url().resolve(path));
  }

  @Test
  void servesMetricsAndHealthReadOnly() throws Exception {
    Counter.builder("ferrite.test.hits")
        .tag("k", "a \"quoted\" \\ value")
        .register(metrics.registry())
        .increment(3);
    server = OpsServer.start("127.0.0.1", 0, metrics, ROOT, "test");
    assertFalse(server.requiresSecret());

    HttpResponse<String> r = send(get("/metrics"));
    assertEquals(200, r.statusCode());
    assertEquals(OpsServer.PROMETHEUS_TYPE, r.headers().firstValue("Content-Type").orElse(""));
    PrometheusText p = PrometheusText.parse(r.body());

    assertEquals("counter", p.type("ferrite_test_hits_total"));
    assertEquals(
        3.0,
        p.value(
            "ferrite_test_hits_total", Map.of("k", "a \"quoted\" \\ value", "process", "test")));

    assertEquals("ok\n", send(get("/health")).body());
    assertEquals(404, send(get("/nothing-here")).statusCode());

    HttpResponse<String> post =
        send(get("/metrics").POST(HttpRequest.BodyPublishers.ofString("x")));
    assertEquals(405, post.statusCode());
    assertEquals("GET, HEAD", post.headers().firstValue("Allow").orElse(""));
    assertEquals(
        405,
        send(get("/health").method("DELETE", HttpRequest.BodyPublishers.noBody())).statusCode());
  }

  @Test
  void offLoopbackAsksForTheClientSecret() throws Exception {
    server = OpsServer.start("127.0.0.1", 0, metrics, ROOT, "test", true);
    assertTrue(server.requiresSecret());
    String client = HexFormat.of().formatHex(ROOT.secretFor(Role.CLIENT));
    String root = HexFormat.of().formatHex(ROOT.secret());
    String wrong = HexFormat.of().formatHex(new byte[32]);

    HttpResponse<String> none = send(get("/metrics"));
    assertEquals(401, none.statusCode());
    assertTrue(none.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"));
    assertEquals(
        401, send(get("/metrics").header("Authorization", "Bearer " + wrong)).statusCode());
    assertEquals(
        401, send(get("/metrics").header("Cookie", "ferrite_token=" + wrong)).statusCode());
    assertEquals(401, send(get("/metrics?token=" + wrong)).statusCode());
    // The server secret is not the client's: a SERVER-role token does not read either.
    String serverSecret = HexFormat.of().formatHex(ROOT.secretFor(Role.SERVER));
    assertEquals(
        401, send(get("/metrics").header("Authorization", "Bearer " + serverSecret)).statusCode());

    assertEquals(
        200, send(get("/metrics").header("Authorization", "Bearer " + client)).statusCode());
    assertEquals(
        200,
        send(get("/health")
                .header("Authorization", "bearer " + client.toUpperCase(java.util.Locale.ROOT)))
            .statusCode());
    assertEquals(200, send(get("/metrics").header("Authorization", "Bearer " + root)).statusCode());
    assertEquals(
        200,
        send(get("/metrics").header("Cookie", "a=b; ferrite_token=" + client + "; c=d"))
            .statusCode());
    HttpResponse<String> query = send(get("/metrics?x=1&token=" + client));
    assertEquals(200, query.statusCode());
    // The token in the URL becomes a cookie, so a browser asks once.
    assertTrue(
        query.headers().firstValue("Set-Cookie").orElse("").startsWith("ferrite_token=" + client));
    // Read-only comes first: a POST with the right token is still refused.
    assertEquals(
        405,
        send(get("/metrics")
                .header("Authorization", "Bearer " + client)
                .POST(HttpRequest.BodyPublishers.noBody()))
            .statusCode());
  }

  @Test
  void aClientRoleProcessAcceptsItsOwnSecretOnly() throws Exception {
    server = OpsServer.start("127.0.0.1", 0, metrics, ROOT.as(Role.CLIENT), "test", true);
    String client = HexFormat.of().formatHex(ROOT.secretFor(Role.CLIENT));
    String root = HexFormat.of().formatHex(ROOT.secret());
    assertEquals(
        200, send(get("/metrics").header("Authorization", "Bearer " + client)).statusCode());
    // Nothing in a CLIENT-role process knows the root: the root is just a wrong token there.
    assertEquals(401, send(get("/metrics").header("Authorization", "Bearer " + root)).statusCode());
  }
}
