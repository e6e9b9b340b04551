package io.ferrite.kernel.local;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * A master and memory servers in this process: the one launcher of {@code ferrite local}, the
 * benchmarks and the in-process sort. The servers all serve the same fabrics, the master serves the
 * {@linkplain Builder#masterFabrics chosen ones}; clients reach it at {@link #masterAddress()}.
 *
 * <p>{@link #close()} stops the servers (last started first), then the master, then the fabrics the
 * cluster opened (not those it was given); it is idempotent and thread-safe, so a shutdown hook and
 * the main thread may both call it. A start that fails part-way stops what it started before it
 * rethrows, in that order.
 */
public final class InProcessCluster implements AutoCloseable {
  private final FerriteConfig config;
  private final List<Fabric> fabrics;
  private final List<Fabric> owned;
  private final List<MemoryServer> servers = new ArrayList<>();
  private Master master;

  /** The masters of groups 1.. (docs/RESILIENCE.md, "Master groups"); empty for one group. */
  private final List<Master> groupMasters = new ArrayList<>();

  /** A master group's members, in master.id order (empty: one master, {@link #master}). */
  private final List<Master> group = new ArrayList<>();

  private Fabric masterFabric;
  private boolean closed;

  private InProcessCluster(FerriteConfig config, List<Fabric> fabrics, List<Fabric> owned) {
    this.config = config;
    this.fabrics = fabrics;
    this.owned = owned;
  }

  /**
   * A cluster of {@code config} (its data.dir, shm.dir, capacities...) whose secret is {@code c}.
   */
  public static Builder builder(FerriteConfig config, Credentials credentials) {
    return new Builder(config, credentials);
  }

  /** What to start; every setting but the configuration and credentials has a default. */
  public static final class Builder {
    private FerriteConfig config;
    private final Credentials credentials;
    private int servers = 1;
    private IntFunction<String> serverNames = i -> "server-" + i;
    private FabricFactory factory;
    private List<String> fabricNames = List.of("tcp", "shm");
    private List<Fabric> given;
    private List<String> masterFabrics;
    private java.util.function.Supplier<List<MasterExtension>> extensions;
    private boolean sharedExtensions;
    private List<FerriteService> services = List.of();
    private Map<String, String> masterOnly = Map.of();
    private int groups = 1;
    private int masters = 1;

    private Builder(FerriteConfig config, Credentials credentials) {
      this.config = Objects.requireNonNull(config, "config");
      this.credentials = Objects.requireNonNull(credentials, "credentials");
    }

    /** How many memory servers (default 1). */
    public Builder servers(int n) {
      if (n < 0) {
        throw new IllegalArgumentException("servers: " + n + " (expected: >= 0)");
      }
      this.servers = n;
      return this;
    }

    /** The name of server {@code i} (1-based), its directory under data.dir: "server-i". */
    public Builder serverNames(IntFunction<String> names) {
      this.serverNames = Objects.requireNonNull(names, "names");
      return this;
    }

    /** Sets data.dir. */
    public Builder dataDir(Path dir) {
      this.config = config.with(FerriteConfig.DATA_DIR, dir.toString());
      return this;
    }

    /**
     * The fabrics to open from {@code factory}, one of each name, in the order the servers serve
     * them; the cluster closes them. Default: tcp and shm from {@link FabricFactory#standard} with
     * the configuration's TLS.
     */
    public Builder fabrics(FabricFactory factory, List<String> names) {
      this.factory = Objects.requireNonNull(factory, "factory");
      this.fabricNames = List.copyOf(names);
      this.given = null;
      return this;
    }

    /**
     * Fabrics the caller opened and closes (after the cluster), in the order servers serve them.
     */
    public Builder fabrics(List<Fabric> fabrics) {
      this.given = List.copyOf(fabrics);
      this.factory = null;
      return this;
    }

    /**
     * The fabrics the master serves, by name, the first being {@link #masterAddress()}'s. Default:
     * tcp (else the first fabric) and shm if there is one: same-host clients then move to the
     * master's shared-memory rings.
     */
    public Builder masterFabrics(List<String> names) {
      this.masterFabrics = List.copyOf(names);
      return this;
    }

    /**
     * A master group of {@code n} (1: a single master, the default; 3 or 5 for a Raft group that
     * survives 1 or 2 failures): master i (from 1) serves tcp at {@code master.port + i - 1}, talks
     * Raft at {@code master.port + 100 + i - 1}, and keeps its data in {@code
     * <data.dir>/masters/i}. The extensions are those {@link java.util.ServiceLoader} finds.
     */
    public Builder masters(int n) {
      if (n < 1 || n > 9) {
        throw new IllegalArgumentException("masters: " + n + " (expected: 1 to 9; 3 survives 1)");
      }
      this.masters = n;
      return this;
    }

    /** The master's extensions (default: those {@link java.util.ServiceLoader} finds). */
    public Builder extensions(List<MasterExtension> extensions) {
      List<MasterExtension> fixed = List.copyOf(extensions);
      this.extensions = () -> fixed;
      this.sharedExtensions = true;
      return this;
    }

    /** The extensions of each master, fresh instances per call (one call per master group). */
    public Builder extensions(java.util.function.Supplier<List<MasterExtension>> extensions) {
      this.extensions = Objects.requireNonNull(extensions, "extensions");
      this.sharedExtensions = false;
      return this;
    }

    /**
     * Keys the master runs with on top of the cluster's configuration, where it differs from the
     * servers' (e.g. a fixed {@code metrics.port} for the master, any port for the servers).
     */
    public Builder masterSettings(Map<String, String> settings) {
      this.masterOnly = Map.copyOf(settings);
      return this;
    }

    /**
     * How many master groups (default 1), each one master over a journal of its own: group 0's in
     * {@code <data.dir>/master}, group g's in {@code <data.dir>/group-<g>/master}, on {@code
     * master.port + g} (any free port when master.port is 0), without metrics. Every server
     * registers with each.
     */
    public Builder groups(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("groups: " + n + " (expected: >= 1)");
      }
      this.groups = n;
      return this;
    }

    /** Services every server runs besides those {@link java.util.ServiceLoader} finds. */
    public Builder services(List<FerriteService> services) {
      this.services = List.copyOf(services);
      return this;
    }

    /** Opens the fabrics, starts the master, then the servers one by one (each registered). */
    public InProcessCluster start() {
      if (groups > 1 && masters > 1) {
        throw new IllegalArgumentException(
            "groups: "
                + groups
                + " with masters: "
                + masters
                + " (not supported in one process yet: start each group's masters with 'ferrite"
                + " master --peers' and name them all in the URI, a;b)");
      }
      if (groups > 1 && sharedExtensions) {
        throw new IllegalArgumentException(
            "groups: "
                + groups
                + " with one list of extensions: each master needs instances of its own (pass a"
                + " supplier)");
      }
      List<Fabric> owned = new ArrayList<>();
      List<Fabric> all;
      if (given != null) {
        all = given;
      } else {
        FabricFactory f = factory != null ? factory : FabricFactory.standard(config);
        try {
          for (String n : fabricNames) {
            owned.add(f.open(n));
          }
        } catch (RuntimeException e) {
          closeFabrics(owned, e);
          throw e;
        }
        all = owned;
      }
      InProcessCluster c = new InProcessCluster(config, all, owned);
      try {
        c.startMaster(masterFabrics != null ? masterFabrics : defaultMasterFabrics(all), this);
        for (int g = 1; g < groups; g++) {
          c.startGroup(g, masterFabrics != null ? masterFabrics : defaultMasterFabrics(all), this);
        }
        for (int i = 1; i <= servers; i++) {
          c.servers.add(
              MemoryServer.start(
                  config.with(FerriteConfig.SERVER_NAME, serverNames.apply(i)),
                  credentials,
                  all,
                  c.masterAddress(),
                  services));
        }
      } catch (RuntimeException e) {
        c.stop(e);
        throw e;
      }
      return c;
    }
  }

  private static List<String> defaultMasterFabrics(List<Fabric> all) {
    if (all.isEmpty()) {
      throw new IllegalArgumentException("no fabric for the master");
    }
    String first = all.get(0).name();
    for (Fabric f : all) {
      if (f.name().equals("tcp")) {
        first = "tcp";
      }
    }
    List<String> out = new ArrayList<>(List.of(first));
    for (Fabric f : all) {
      if (f.name().equals("shm") && !first.equals("shm")) {
        out.add("shm");
      }
    }
    return out;
  }

  private void startMaster(List<String> names, Builder b) {
    List<Fabric> served = new ArrayList<>();
    for (String n : names) {
      served.add(fabric(n));
    }
    masterFabric = served.get(0);
    FerriteConfig mc = config;
    for (Map.Entry<String, String> e : b.masterOnly.entrySet()) {
      mc = mc.with(e.getKey(), e.getValue());
    }
    if (b.masters == 1) {
      master =
          b.extensions == null
              ? Master.start(mc, b.credentials, served)
              : Master.start(mc, b.credentials, served, b.extensions.get());
      return;
    }
    if (b.extensions != null) {
      throw new IllegalArgumentException(
          "a master group makes its extensions itself (ServiceLoader): no extensions(...)");
    }
    int base = mc.masterPort();
    if (base == 0) {
      throw new IllegalArgumentException(
          "a master group needs a fixed master.port (master i serves port + i - 1)");
    }
    List<String> peers = new ArrayList<>();
    for (int i = 0; i < b.masters; i++) {
      peers.add(mc.masterHost() + ":" + (base + i) + ":" + (base + 100 + i));
    }
    for (int i = 1; i <= b.masters; i++) {
      FerriteConfig one =
          mc.with(FerriteConfig.MASTER_PEERS, String.join(",", peers))
              .with(FerriteConfig.MASTER_ID, String.valueOf(i))
              .with(FerriteConfig.MASTER_PORT, String.valueOf(base + i - 1))
              .with(
                  FerriteConfig.DATA_DIR,
                  mc.dataDir().resolve("masters").resolve(String.valueOf(i)).toString());
      if (i > 1) {
        one = one.with(FerriteConfig.METRICS_PORT, "-1"); // one console: the first master's
      }
      group.add(Master.start(one, b.credentials, served));
    }
    master = group.get(0);
  }

  private void startGroup(int g, List<String> names, Builder b) {
    List<Fabric> served = new ArrayList<>();
    for (String n : names) {
      // Not shm: its endpoint lives in the cluster's shm directory under one fixed name, which
      // group 0's master holds; same-host clients reach the other groups over tcp.
      if (!n.equals("shm")) {
        served.add(fabric(n));
      }
    }
    if (served.isEmpty()) {
      throw new IllegalArgumentException("master group " + g + ": no fabric but shm to serve");
    }
    int port = config.masterPort();
    FerriteConfig gc =
        config
            .with(FerriteConfig.DATA_DIR, config.dataDir().resolve("group-" + g).toString())
            .with(FerriteConfig.MASTER_PORT, Integer.toString(port == 0 ? 0 : port + g))
            .with(FerriteConfig.METRICS_PORT, "-1");
    groupMasters.add(
        b.extensions == null
            ? Master.start(gc, b.credentials, served)
            : Master.start(gc, b.credentials, served, b.extensions.get()));
  }

  /** The master of group {@code g} (0: {@link #master()}, the first of its Raft group if any). */
  public Master master(int g) {
    return g == 0 ? master : groupMasters.get(g - 1);
  }

  /** How many master groups. */
  public int groups() {
    return groupMasters.size() + 1;
  }

  /** The configuration the master runs with (the servers', but for server.name). */
  public FerriteConfig config() {
    return config;
  }

  /**
   * The master; of a group, the one serving as leader now (waiting up to 30 s for an election, else
   * the first).
   */
  public Master master() {
    if (group.isEmpty()) {
      return master;
    }
    long until = System.nanoTime() + 30_000_000_000L;
    while (System.nanoTime() < until) {
      for (Master m : group) {
        if (m.role().equals("leader")) {
          return m;
        }
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return master;
  }

  /** Every master: the group's members in master.id order, or the single master. */
  public List<Master> masters() {
    return group.isEmpty() ? List.of(master) : Collections.unmodifiableList(group);
  }

  /** The servers, in start order. */
  public List<MemoryServer> servers() {
    return Collections.unmodifiableList(servers);
  }

  /** The fabric called {@code name} the servers serve. */
  public Fabric fabric(String name) {
    for (Fabric f : fabrics) {
      if (f.name().equals(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException(
        "fabric: "
            + name
            + " (the cluster has "
            + fabrics.stream().map(Fabric::name).toList()
            + ")");
  }

  /**
   * The master's address on its first fabric (tcp by default), as servers and clients use it; with
   * several groups every group's, separated by {@code ;}.
   */
  public String masterAddress() {
    // Group 0's masters joined by ',', then each other group's (one master each) after ';'.
    List<String> all = new ArrayList<>();
    for (Master m : masters()) {
      all.add(m.addresses().get(masterFabric.name()));
    }
    StringBuilder b = new StringBuilder(String.join(",", all));
    for (Master m : groupMasters) {
      b.append(';').append(m.addresses().get(masterFabric.name()));
    }
    return b.toString();
  }

  /**
   * The cluster's URI for client commands: {@code ferrite://127.0.0.1:port} when the master serves
   * tcp first, otherwise its address.
   */
  public String uri() {
    if (!masterFabric.name().equals("tcp")) {
      return masterAddress();
    }
    List<String> ports = new ArrayList<>();
    for (Master m : masters()) {
      String a = m.addresses().get("tcp");
      ports.add("127.0.0.1:" + a.substring(a.lastIndexOf(':') + 1));
    }
    StringBuilder b = new StringBuilder("ferrite://" + String.join(",", ports));
    for (Master m : groupMasters) {
      String a = m.addresses().get("tcp");
      b.append(";127.0.0.1:").append(a.substring(a.lastIndexOf(':') + 1));
    }
    return b.toString();
  }

  /** Writes a cluster file naming {@link #uri()}, the secret file and the TLS trust (or null). */
  public ClusterFile writeClusterFile(Path file, Path secretFile, Path tlsTrust) {
    ClusterFile cf = new ClusterFile(uri(), config.clusterId(), secretFile, tlsTrust);
    cf.write(file);
    return cf;
  }

  /** Stops the servers (last first), the master, then the fabrics it opened; idempotent. */
  @Override
  public void close() {
    stop(null);
  }

  private synchronized void stop(RuntimeException failure) {
    if (closed) {
      return;
    }
    closed = true;
    for (int i = servers.size() - 1; i >= 0; i--) {
      closeQuietly(servers.get(i), failure);
    }
    for (int g = groupMasters.size() - 1; g >= 0; g--) {
      closeQuietly(groupMasters.get(g), failure);
    }
    if (group.isEmpty() && master != null) {
      closeQuietly(master, failure);
    }
    for (int i = group.size() - 1; i >= 0; i--) {
      closeQuietly(group.get(i), failure);
    }
    closeFabrics(owned, failure);
  }

  private static void closeFabrics(List<Fabric> list, RuntimeException failure) {
    for (Fabric f : list) {
      closeQuietly(f, failure);
    }
  }

  /** Closes {@code c}; its failure is added to {@code failure} or rethrown after the rest. */
  private static void closeQuietly(AutoCloseable c, RuntimeException failure) {
    try {
      c.close();
    } catch (Exception e) {
      if (failure != null) {
        failure.addSuppressed(e);
      } else {
        System.getLogger(InProcessCluster.class.getName())
            .log(System.Logger.Level.WARNING, "stopping " + c, e);
      }
    }
  }
}
