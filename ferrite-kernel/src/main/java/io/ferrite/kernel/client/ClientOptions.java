package io.ferrite.kernel.client;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.HostIdentity;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a {@link FerriteClient} connects: credentials, which fabric to use per server, where fabrics
 * come from, timeouts and retries. Immutable; build with {@link #builder(Credentials)} or {@link
 * #from(FerriteConfig)}.
 *
 * @param credentials cluster id and secret
 * @param fabric {@code auto} (shm to servers on this host that offer it, else tcp), {@code shm},
 *     {@code tcp} or {@code local}
 * @param fabrics where fabric instances come from; the client closes those it opened
 * @param clientName shown in the master's logs
 * @param leaseMillis the session lease to ask for; 0 for the master's default
 * @param session false for admin tools that only read status (no session, no allocation)
 * @param rpcTimeout deadline of control RPCs
 * @param connectTimeout bound on connect plus handshake
 * @param opTimeout deadline of one-sided ops
 * @param maxAttempts attempts of an operation that is safe to retry (reads, connects), >= 1
 * @param masterDeadline how long a master call (kernel or a face's) waits out a master that is
 *     unreachable, restarting or not the leader, retrying with backoff, before it fails with the
 *     last error ({@link java.time.Duration#ZERO}: it fails at once, after the connect's own
 *     attempts)
 * @param hostId this host's identity, compared with servers' for {@code auto}
 * @param metrics where the client counts its fabric ops ({@code ferrite.fabric.*}) and the faces
 *     their operations ({@code ferrite.face.ops}); null (the default): not counted
 * @param config the process's configuration, where faces read their client-side keys (the defaults
 *     unless built {@link #from(FerriteConfig)} or given)
 */
public record ClientOptions(
    Credentials credentials,
    String fabric,
    FabricFactory fabrics,
    String clientName,
    int leaseMillis,
    boolean session,
    Duration rpcTimeout,
    Duration connectTimeout,
    Duration opTimeout,
    int maxAttempts,
    Duration masterDeadline,
    String hostId,
    io.micrometer.core.instrument.MeterRegistry metrics,
    FerriteConfig config) {

  public ClientOptions {
    Objects.requireNonNull(credentials, "credentials");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(fabrics, "fabrics");
    if (!List.of("auto", "shm", "tcp", "local").contains(fabric)) {
      throw new IllegalArgumentException(
          "fabric: " + fabric + " (expected: auto, shm, tcp or local)");
    }
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts: " + maxAttempts + " (expected: >= 1)");
    }
    Objects.requireNonNull(masterDeadline, "masterDeadline");
    if (masterDeadline.isNegative()) {
      throw new IllegalArgumentException("masterDeadline: " + masterDeadline + " (expected: >= 0)");
    }
    if (leaseMillis < 0) {
      throw new IllegalArgumentException("leaseMillis: " + leaseMillis + " (expected: >= 0)");
    }
  }

  public static Builder builder(Credentials credentials) {
    return new Builder(credentials);
  }

  /** Options from a process configuration: its credentials, client fabric and timeouts. */
  public static ClientOptions from(FerriteConfig cfg) {
    return builder(cfg.credentials())
        .fabric(cfg.clientFabric())
        .fabrics(FabricFactory.standard(cfg))
        .rpcTimeout(cfg.rpcTimeout())
        .masterDeadline(cfg.clientMasterDeadline())
        .config(cfg)
        .build();
  }

  /** A copy using {@code factory} for fabrics. */
  public ClientOptions withFabrics(FabricFactory factory) {
    return new ClientOptions(
        credentials,
        fabric,
        factory,
        clientName,
        leaseMillis,
        session,
        rpcTimeout,
        connectTimeout,
        opTimeout,
        maxAttempts,
        masterDeadline,
        hostId,
        metrics,
        config);
  }

  /** Builder with the defaults: auto fabric, standard fabrics, 5 s timeouts, 3 attempts. */
  public static final class Builder {
    private final Credentials credentials;
    private String fabric = "auto";
    private FabricFactory fabrics = FabricFactory.standard();
    private String clientName = "client";
    private int leaseMillis;
    private boolean session = true;
    private Duration rpcTimeout = Duration.ofSeconds(5);
    private Duration connectTimeout = Duration.ofSeconds(5);
    private Duration opTimeout = Duration.ofSeconds(10);
    private int maxAttempts = 3;
    private Duration masterDeadline = Duration.ofSeconds(15);
    private String hostId;
    private io.micrometer.core.instrument.MeterRegistry metrics;
    private FerriteConfig config;

    private Builder(Credentials credentials) {
      this.credentials = credentials;
    }

    public Builder fabric(String v) {
      fabric = v;
      return this;
    }

    public Builder fabrics(FabricFactory v) {
      fabrics = v;
      return this;
    }

    public Builder clientName(String v) {
      clientName = v;
      return this;
    }

    public Builder leaseMillis(int v) {
      leaseMillis = v;
      return this;
    }

    public Builder session(boolean v) {
      session = v;
      return this;
    }

    public Builder rpcTimeout(Duration v) {
      rpcTimeout = v;
      return this;
    }

    public Builder connectTimeout(Duration v) {
      connectTimeout = v;
      return this;
    }

    public Builder opTimeout(Duration v) {
      opTimeout = v;
      return this;
    }

    public Builder maxAttempts(int v) {
      maxAttempts = v;
      return this;
    }

    /** How long a master call waits out an unreachable master (default 15 s; 0: not at all). */
    public Builder masterDeadline(Duration v) {
      masterDeadline = v;
      return this;
    }

    public Builder hostId(String v) {
      hostId = v;
      return this;
    }

    /**
     * Counts the client's fabric ops and face operations in {@code v} (e.g. a {@link
     * io.ferrite.kernel.ops.Metrics#registry} served by an {@link
     * io.ferrite.kernel.ops.OpsServer}); null: not counted.
     */
    public Builder metrics(io.micrometer.core.instrument.MeterRegistry v) {
      metrics = v;
      return this;
    }

    /** The configuration faces read their client-side keys from (default: the defaults). */
    public Builder config(FerriteConfig v) {
      config = v;
      return this;
    }

    public ClientOptions build() {
      return new ClientOptions(
          credentials,
          fabric,
          fabrics,
          clientName,
          leaseMillis,
          session,
          rpcTimeout,
          connectTimeout,
          opTimeout,
          maxAttempts,
          masterDeadline,
          hostId != null ? hostId : HostIdentity.local(),
          metrics,
          config != null ? config : FerriteConfig.defaults());
    }
  }
}
