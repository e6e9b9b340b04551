package io.ferrite.kernel.config;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.netty.Tls;
import io.ferrite.kernel.proto.Sizes;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * The configuration of one Ferrite process: master, memory server or client. Immutable and passed
 * explicitly; there is no global configuration.
 *
 * <p>Built in layers, each overriding the one before: {@linkplain #KEYS defaults}, then a
 * properties file, then the environment ({@code FERRITE_} + the key in upper case with dots as
 * underscores, e.g. {@code FERRITE_MASTER_PORT}), then command-line flags. Unknown keys in a file
 * or in flags are rejected (a typo must not silently fall back to a default); unknown {@code
 * FERRITE_*} variables are ignored.
 *
 * <p>Sizes accept {@code k}, {@code m}, {@code g} suffixes (powers of 1024); durations accept
 * {@code ms}, {@code s}, {@code m} suffixes (a bare number is milliseconds).
 *
 * <p>The kernel's keys are listed here; each face adds its own through {@link ConfigKeys} (found by
 * {@link ServiceLoader} once, when this class initializes), so a face's key is known exactly when
 * the face is on the class path.
 */
public final class FerriteConfig {
  public static final String CLUSTER_ID = "cluster.id";
  public static final String SECRET = "cluster.secret";
  public static final String SECRET_FILE = "cluster.secret.file";
  public static final String MASTER_HOST = "master.host";
  public static final String MASTER_PORT = "master.port";
  public static final String MASTER_PEERS = "master.peers";
  public static final String MASTER_ID = "master.id";
  public static final String MASTER_RAFT_TIMEOUT = "master.raft.timeout";
  public static final String MASTER_RAFT_SEGMENT = "master.raft.segment.size";
  public static final String DATA_DIR = "data.dir";
  public static final String SERVER_NAME = "server.name";
  public static final String SERVER_HOST = "server.host";
  public static final String SERVER_PORT = "server.port";
  public static final String SERVER_FABRICS = "server.fabrics";
  public static final String CAPACITY_DRAM = "capacity.dram";
  public static final String CAPACITY_DISK = "capacity.disk";
  public static final String SHM_DIR = "shm.dir";
  public static final String REGION_SIZE = "region.size";
  public static final String BLOCK_SIZE = "block.size";
  public static final String SERVICE_THREADS = "service.threads";
  public static final String HEARTBEAT_INTERVAL = "heartbeat.interval";
  public static final String DEAD_TIMEOUT = "server.dead.timeout";
  public static final String SESSION_LEASE = "session.lease";
  public static final String CLIENT_FABRIC = "client.fabric";
  public static final String JOURNAL_FSYNC = "journal.fsync";
  public static final String SNAPSHOT_EVERY = "journal.snapshot.every";
  public static final String RPC_TIMEOUT = "rpc.timeout";
  public static final String CLIENT_MASTER_DEADLINE = "client.master.deadline";
  public static final String TLS_ENABLED = "tls.enabled";
  public static final String TLS_CERT = "tls.cert";
  public static final String TLS_KEY = "tls.key";
  public static final String TLS_TRUST = "tls.trust";
  public static final String METRICS_HOST = "metrics.host";
  public static final String METRICS_PORT = "metrics.port";
  public static final String NETTY_LANES = "netty.lanes";
  public static final String NETTY_LOOP_WRITES_ONLY = "netty.loop.writes.only";
  public static final String SHM_RINGS = "shm.rings";
  public static final String SHM_WAITER_SPIN = "shm.waiter.spin.nanos";
  public static final String SHM_POLLER_SPIN = "shm.poller.spin.nanos";
  public static final String TCP_POLL_SPIN = "tcp.poll.spin.nanos";

  /**
   * Every key with its default and a one-line description (shown by {@code ferrite config}): the
   * kernel's, then those of every {@link ConfigKeys} on the class path.
   */
  public static final Map<String, String[]> KEYS;

  /** The modules' keys, for their validation. */
  private static final List<ConfigKeys> MODULES;

  static {
    Map<String, String[]> k = new LinkedHashMap<>();
    k.put(CLUSTER_ID, new String[] {"ferrite", "cluster id; both ends of a connection must agree"});
    k.put(SECRET, new String[] {"", "cluster secret in hex (>= 16 bytes); prefer a secret file"});
    k.put(SECRET_FILE, new String[] {"", "file holding the cluster secret in hex, mode 0600"});
    k.put(MASTER_HOST, new String[] {"127.0.0.1", "master host"});
    k.put(MASTER_PORT, new String[] {"7100", "master tcp port"});
    k.put(
        MASTER_PEERS,
        new String[] {
          "", "master group (Raft): host:port:raftPort of each master, comma-separated; empty: one"
        });
    k.put(
        MASTER_ID,
        new String[] {"0", "this master's place in master.peers, from 1 (a master group only)"});
    k.put(
        MASTER_RAFT_TIMEOUT,
        new String[] {"500ms", "master group election timeout (min; max is twice its value)"});
    k.put(
        MASTER_RAFT_SEGMENT,
        new String[] {"8m", "master group Raft log segment size (a snapshot purges whole ones)"});
    k.put(
        DATA_DIR,
        new String[] {defaultDataDir(), "data directory (journal, server ids, disk regions)"});
    k.put(
        SERVER_NAME, new String[] {"server", "memory server name = its directory under data.dir"});
    k.put(
        SERVER_HOST,
        new String[] {
          "127.0.0.1",
          "address a memory server binds and announces (0.0.0.0: announces the one toward the master)"
        });
    k.put(SERVER_PORT, new String[] {"0", "memory server tcp port (0: any free port)"});
    k.put(SERVER_FABRICS, new String[] {"tcp,shm", "fabrics a memory server serves"});
    k.put(CAPACITY_DRAM, new String[] {"256m", "dram storage class capacity of a memory server"});
    k.put(CAPACITY_DISK, new String[] {"0", "disk storage class capacity of a memory server"});
    k.put(SHM_DIR, new String[] {"/dev/shm", "where dram region files live"});
    k.put(REGION_SIZE, new String[] {"64m", "region size (a multiple of block.size, <= 1g)"});
    k.put(BLOCK_SIZE, new String[] {"1m", "block size handed out by the master"});
    k.put(SERVICE_THREADS, new String[] {"4", "RPC service threads per endpoint"});
    k.put(HEARTBEAT_INTERVAL, new String[] {"500ms", "memory server heartbeat interval"});
    k.put(DEAD_TIMEOUT, new String[] {"3s", "a server silent this long is marked DEAD"});
    k.put(SESSION_LEASE, new String[] {"10s", "client session lease; unrenewed sessions expire"});
    k.put(
        CLIENT_FABRIC,
        new String[] {"auto", "client fabric: auto (shm on same host, else tcp), shm, tcp, local"});
    k.put(
        JOURNAL_FSYNC,
        new String[] {
          "true",
          "fsync the master journal (group commit: one fsync per batch, no answer before it)"
        });
    k.put(
        SNAPSHOT_EVERY,
        new String[] {
          "10000", "journal records between snapshots (and at least as many as the last one held)"
        });
    k.put(RPC_TIMEOUT, new String[] {"5s", "deadline of control RPCs"});
    k.put(
        CLIENT_MASTER_DEADLINE,
        new String[] {
          "15s",
          "how long a client call waits out an unreachable or restarting master (0: fail at once)"
        });
    k.put(TLS_ENABLED, new String[] {"false", "TLS 1.3 on the tcp fabric (servers and clients)"});
    k.put(TLS_CERT, new String[] {"", "PEM certificate chain a server presents (tls.enabled)"});
    k.put(TLS_KEY, new String[] {"", "PEM PKCS#8 private key of tls.cert, mode 0600"});
    k.put(
        TLS_TRUST,
        new String[] {"", "PEM certificates a client accepts a server's from (default: tls.cert)"});
    k.put(
        METRICS_HOST,
        new String[] {
          "127.0.0.1",
          "address of the metrics/console HTTP endpoint; off loopback it asks for the secret"
        });
    k.put(
        METRICS_PORT,
        new String[] {"-1", "HTTP port of /metrics (and the master's console); -1 off, 0 any"});
    // The fabrics' switches (FabricTuning), made into fabrics by FabricFactory.standard(cfg).
    k.put(
        NETTY_LANES,
        new String[] {
          "16", "blocking lanes (sockets for small synchronous reads) per tcp connection; 0 off"
        });
    k.put(
        NETTY_LOOP_WRITES_ONLY,
        new String[] {
          "false", "every frame written by the event loop, none by caller threads (diagnostic)"
        });
    k.put(
        SHM_RINGS,
        new String[] {"true", "RPCs over shared-memory rings on shm; false: over the socket"});
    k.put(
        SHM_WAITER_SPIN,
        new String[] {"0", "ns an shm ring caller busy-spins before it yields (spare cores)"});
    k.put(
        SHM_POLLER_SPIN,
        new String[] {"0", "ns an shm ring poller busy-spins before it yields (spare cores)"});
    k.put(
        TCP_POLL_SPIN,
        new String[] {
          Long.toString(FabricTuning.DEFAULT_TCP_POLL_SPIN_NANOS),
          "ns a tcp server event loop or lane caller polls (yielding) before it blocks; 0 off"
        });
    List<ConfigKeys> modules = new ArrayList<>();
    ServiceLoader.load(ConfigKeys.class, FerriteConfig.class.getClassLoader())
        .forEach(modules::add);
    // A stable order whatever the class path's: by class name.
    modules.sort(java.util.Comparator.comparing(m -> m.getClass().getName()));
    for (ConfigKeys m : modules) {
      for (ConfigKeys.Key key : m.keys()) {
        String[] was =
            k.putIfAbsent(key.name(), new String[] {key.defaultValue(), key.description()});
        if (was != null) {
          throw new IllegalStateException(
              "configuration key " + key.name() + " of " + m.getClass().getName() + " is taken");
        }
      }
    }
    KEYS = Collections.unmodifiableMap(k);
    MODULES = List.copyOf(modules);
  }

  private final Map<String, String> values;

  private FerriteConfig(Map<String, String> values) {
    this.values = Collections.unmodifiableMap(new TreeMap<>(values));
    validate();
  }

  private static String defaultDataDir() {
    return Path.of(System.getProperty("user.home", "."), ".ferrite", "data").toString();
  }

  /** The defaults alone. */
  public static FerriteConfig defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Layers the configuration in order: defaults, {@code file} (may be null), env, flags. */
  public static FerriteConfig load(Path file, Map<String, String> env, Map<String, String> flags) {
    Builder b = builder();
    if (file != null) {
      b.file(file);
    }
    return b.env(env).flags(flags).build();
  }

  /** Accumulates layers; later calls override earlier ones. */
  public static final class Builder {
    private final Map<String, String> values = new TreeMap<>();

    private Builder() {
      KEYS.forEach((k, v) -> values.put(k, v[0]));
    }

    public Builder file(Path file) {
      Properties p = new Properties();
      try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
        p.load(r);
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot read configuration file " + file + ": " + e, e);
      }
      for (String k : p.stringPropertyNames()) {
        set(k, p.getProperty(k), "file " + file);
      }
      return this;
    }

    public Builder env(Map<String, String> env) {
      for (String k : KEYS.keySet()) {
        String v = env.get(envName(k));
        if (v != null) {
          values.put(k, v.trim());
        }
      }
      return this;
    }

    public Builder flags(Map<String, String> flags) {
      flags.forEach((k, v) -> set(k, v, "flags"));
      return this;
    }

    public Builder set(String key, String value) {
      return set(key, value, "set");
    }

    private Builder set(String key, String value, String source) {
      if (!KEYS.containsKey(key)) {
        throw new IllegalArgumentException(
            "unknown configuration key '"
                + key
                + "' in "
                + source
                + " (known: "
                + KEYS.keySet()
                + ")");
      }
      values.put(key, value.trim());
      return this;
    }

    public FerriteConfig build() {
      return new FerriteConfig(values);
    }
  }

  /** The environment variable that sets {@code key}. */
  public static String envName(String key) {
    return "FERRITE_" + key.toUpperCase(Locale.ROOT).replace('.', '_');
  }

  /** A copy with {@code key} set to {@code value}. */
  public FerriteConfig with(String key, String value) {
    Builder b = builder();
    values.forEach(b::set);
    return b.set(key, value).build();
  }

  private void validate() {
    long region = regionSize();
    long block = blockSize();
    if (block < 4096 || (block & 7) != 0) {
      throw new IllegalArgumentException(
          BLOCK_SIZE + ": " + block + " (expected: >= 4096 and a multiple of 8)");
    }
    if (region < block || region % block != 0 || region > (1L << 30)) {
      throw new IllegalArgumentException(
          REGION_SIZE
              + ": "
              + region
              + " (expected: a multiple of "
              + BLOCK_SIZE
              + " "
              + block
              + " and <= 1 GiB)");
    }
    for (String cls : List.of("dram", "disk")) {
      long c = capacity(cls);
      if (c % region != 0) {
        throw new IllegalArgumentException(
            "capacity."
                + cls
                + ": "
                + c
                + " (expected: a multiple of "
                + REGION_SIZE
                + " "
                + region
                + ")");
      }
    }
    if (serviceThreads() < 1) {
      throw new IllegalArgumentException(SERVICE_THREADS + ": expected >= 1");
    }
    if (deadTimeout().compareTo(heartbeatInterval()) <= 0) {
      throw new IllegalArgumentException(
          DEAD_TIMEOUT + " must be longer than " + HEARTBEAT_INTERVAL);
    }
    String f = clientFabric();
    if (!List.of("auto", "shm", "tcp", "local").contains(f)) {
      throw new IllegalArgumentException(
          CLIENT_FABRIC + ": " + f + " (expected: auto, shm, tcp or local)");
    }
    int port = masterPort();
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException(MASTER_PORT + ": " + port + " (expected: 0 to 65535)");
    }
    snapshotEvery();
    List<MasterPeer> peers = masterPeers();
    // master.id 0: not a master of the group (a memory server or a client sharing the file).
    if (masterId() < 0 || masterId() > peers.size()) {
      throw new IllegalArgumentException(
          MASTER_ID
              + ": "
              + masterId()
              + " (expected: 1 to "
              + peers.size()
              + ", this master's"
              + " place in "
              + MASTER_PEERS
              + ")");
    }
    masterRaftTimeout();
    masterRaftSegmentSize();
    fabricTuning();
    sessionLease();
    rpcTimeout();
    clientMasterDeadline();
    serverPort();
    for (ConfigKeys m : MODULES) {
      m.validate(this);
    }
    if (tlsEnabled() && get(TLS_CERT).isEmpty() && get(TLS_TRUST).isEmpty()) {
      throw new IllegalArgumentException(
          TLS_ENABLED
              + " needs "
              + TLS_TRUST
              + " (a client) or "
              + TLS_CERT
              + " and "
              + TLS_KEY
              + " (a server); 'ferrite tls generate --dir D' makes a pair");
    }
  }

  public String get(String key) {
    String v = values.get(key);
    if (v == null) {
      throw new IllegalArgumentException("unknown configuration key '" + key + "'");
    }
    return v;
  }

  /** Every key with its effective value (secrets masked). */
  public Map<String, String> effective() {
    Map<String, String> m = new TreeMap<>(values);
    if (!m.get(SECRET).isEmpty()) {
      m.put(SECRET, "<hidden>");
    }
    return m;
  }

  /** {@code key}'s value as a size ({@code 64m}), for modules' keys. */
  public long getSize(String key) {
    return size(key);
  }

  /** {@code key}'s value as an int, for modules' keys. */
  public int getInt(String key) {
    return integer(key);
  }

  /** {@code key}'s value as a long, for modules' keys. */
  public long getLong(String key) {
    try {
      return Long.parseLong(get(key));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + get(key) + "' (expected: an integer)", e);
    }
  }

  /** {@code key}'s value as a boolean: {@code true} or {@code false}, nothing else. */
  public boolean getBoolean(String key) {
    String v = get(key).toLowerCase(Locale.ROOT);
    if (!v.equals("true") && !v.equals("false")) {
      throw new IllegalArgumentException(key + ": '" + get(key) + "' (expected: true or false)");
    }
    return v.equals("true");
  }

  /** {@code key}'s value as a duration ({@code 500ms}, {@code 2s}), for modules' keys. */
  public Duration getDuration(String key) {
    return duration(key);
  }

  private long size(String key) {
    try {
      return Sizes.parse(get(key));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(key + ": " + e.getMessage(), e);
    }
  }

  private int integer(String key) {
    try {
      return Integer.parseInt(get(key));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + get(key) + "' (expected: an integer)", e);
    }
  }

  /** Parses {@code 500ms}, {@code 3s}, {@code 2m} or a bare number of milliseconds. */
  public static Duration parseDuration(String key, String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    try {
      Duration d;
      if (t.endsWith("ms")) {
        d = Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2).trim()));
      } else if (t.endsWith("s")) {
        d =
            Duration.ofMillis(
                Math.round(Double.parseDouble(t.substring(0, t.length() - 1)) * 1000));
      } else if (t.endsWith("m")) {
        d = Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1).trim()));
      } else {
        d = Duration.ofMillis(Long.parseLong(t));
      }
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(key + ": " + s + " (expected: > 0)");
      }
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          key + ": '" + s + "' (expected: a duration like 500ms, 3s or 2m)", e);
    }
  }

  private Duration duration(String key) {
    return parseDuration(key, get(key));
  }

  public String clusterId() {
    return get(CLUSTER_ID);
  }

  public String masterHost() {
    return get(MASTER_HOST);
  }

  public int masterPort() {
    return integer(MASTER_PORT);
  }

  /**
   * One master of a group ({@code master.peers}): where clients and servers reach it ({@code
   * host:port}, tcp) and where its Raft server listens ({@code host:raftPort}).
   */
  public record MasterPeer(String host, int port, int raftPort) {
    /** Its client address, {@code tcp://host:port}: what NOT_LEADER names. */
    public String tcpAddress() {
      return "tcp://" + host + ":" + port;
    }

    public String raftAddress() {
      return host + ":" + raftPort;
    }
  }

  /**
   * The master group, {@code master.peers} parsed ({@code host:port:raftPort,...}); empty for a
   * single master.
   */
  public List<MasterPeer> masterPeers() {
    String v = get(MASTER_PEERS).trim();
    List<MasterPeer> out = new ArrayList<>();
    if (v.isEmpty()) {
      return out;
    }
    for (String part : v.split(",")) {
      String p = part.trim();
      int b = p.lastIndexOf(':');
      int a = b > 0 ? p.lastIndexOf(':', b - 1) : -1;
      try {
        if (a <= 0) {
          throw new NumberFormatException();
        }
        int port = Integer.parseInt(p.substring(a + 1, b));
        int raft = Integer.parseInt(p.substring(b + 1));
        if (port < 1 || port > 65535 || raft < 1 || raft > 65535) {
          throw new NumberFormatException();
        }
        out.add(new MasterPeer(p.substring(0, a), port, raft));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            MASTER_PEERS
                + ": '"
                + p
                + "' (expected: host:port:raftPort, e.g."
                + " 10.0.0.1:7100:7200)");
      }
    }
    return out;
  }

  /** This master's place in {@link #masterPeers} (from 1); 0 for a single master. */
  public int masterId() {
    return integer(MASTER_ID);
  }

  /** The master group's Raft log segment size (at least 64 KiB). */
  public long masterRaftSegmentSize() {
    long v = size(MASTER_RAFT_SEGMENT);
    if (v < 64 << 10) {
      throw new IllegalArgumentException(
          MASTER_RAFT_SEGMENT + ": " + v + " (expected: at least 64k)");
    }
    return v;
  }

  /** The master group's minimum election timeout. */
  public Duration masterRaftTimeout() {
    return duration(MASTER_RAFT_TIMEOUT);
  }

  /** The master's tcp address, {@code tcp://host:port}. */
  public String masterTcpAddress() {
    return "tcp://" + masterHost() + ":" + masterPort();
  }

  public Path dataDir() {
    return Path.of(get(DATA_DIR));
  }

  public String serverName() {
    return get(SERVER_NAME);
  }

  public String serverHost() {
    return get(SERVER_HOST);
  }

  public int serverPort() {
    return integer(SERVER_PORT);
  }

  public List<String> serverFabrics() {
    List<String> out = new ArrayList<>();
    for (String s : get(SERVER_FABRICS).split(",")) {
      if (!s.isBlank()) {
        out.add(s.trim().toLowerCase(Locale.ROOT));
      }
    }
    return out;
  }

  /** Capacity of storage class {@code cls} ({@code dram} or {@code disk}) on a memory server. */
  public long capacity(String cls) {
    return size("capacity." + cls);
  }

  public Path shmDir() {
    return Path.of(get(SHM_DIR));
  }

  public long regionSize() {
    return size(REGION_SIZE);
  }

  public long blockSize() {
    return size(BLOCK_SIZE);
  }

  public int serviceThreads() {
    return integer(SERVICE_THREADS);
  }

  public Duration heartbeatInterval() {
    return duration(HEARTBEAT_INTERVAL);
  }

  public Duration deadTimeout() {
    return duration(DEAD_TIMEOUT);
  }

  public Duration sessionLease() {
    return duration(SESSION_LEASE);
  }

  public Duration rpcTimeout() {
    return duration(RPC_TIMEOUT);
  }

  /** How long a client's master call waits out an unreachable master ({@code 0}: not at all). */
  public Duration clientMasterDeadline() {
    return duration(CLIENT_MASTER_DEADLINE);
  }

  public String clientFabric() {
    return get(CLIENT_FABRIC).toLowerCase(Locale.ROOT);
  }

  public boolean journalFsync() {
    return Boolean.parseBoolean(get(JOURNAL_FSYNC));
  }

  public int snapshotEvery() {
    int n = integer(SNAPSHOT_EVERY);
    if (n < 1) {
      throw new IllegalArgumentException(SNAPSHOT_EVERY + ": " + n + " (expected: >= 1)");
    }
    return n;
  }

  public String metricsHost() {
    return get(METRICS_HOST);
  }

  /** The metrics endpoint's port: -1 when off, 0 for any free port. */
  public int metricsPort() {
    int p = integer(METRICS_PORT);
    if (p < -1 || p > 65535) {
      throw new IllegalArgumentException(METRICS_PORT + ": " + p + " (expected: -1, or 0..65535)");
    }
    return p;
  }

  /**
   * The fabrics' switches: {@link #NETTY_LANES}, {@link #NETTY_LOOP_WRITES_ONLY}, {@link
   * #SHM_RINGS}, {@link #SHM_WAITER_SPIN}, {@link #SHM_POLLER_SPIN}, {@link #TCP_POLL_SPIN}.
   */
  public FabricTuning fabricTuning() {
    int lanes = integer(NETTY_LANES);
    if (lanes < 0) {
      throw new IllegalArgumentException(NETTY_LANES + ": " + lanes + " (expected: >= 0)");
    }
    long waiter = getLong(SHM_WAITER_SPIN);
    long poller = getLong(SHM_POLLER_SPIN);
    long tcpPoll = getLong(TCP_POLL_SPIN);
    for (String key : List.of(SHM_WAITER_SPIN, SHM_POLLER_SPIN, TCP_POLL_SPIN)) {
      if (getLong(key) < 0) {
        throw new IllegalArgumentException(key + ": " + get(key) + " (expected: >= 0)");
      }
    }
    return new FabricTuning(
        lanes, !getBoolean(NETTY_LOOP_WRITES_ONLY), getBoolean(SHM_RINGS), waiter, poller, tcpPoll);
  }

  public boolean tlsEnabled() {
    return Boolean.parseBoolean(get(TLS_ENABLED));
  }

  /**
   * The TLS of this process's tcp fabric, or null when {@link #TLS_ENABLED} is off. A server
   * presents {@link #TLS_CERT} with {@link #TLS_KEY}; as a client (every process is one: servers
   * reach the master) it trusts {@link #TLS_TRUST}, by default {@link #TLS_CERT} (a self-signed
   * pair shared by the cluster).
   *
   * @throws io.ferrite.fabric.FerriteException naming a file that cannot be used
   */
  public Tls tls() {
    if (!tlsEnabled()) {
      return null;
    }
    Path cert = optionalPath(TLS_CERT);
    Path key = optionalPath(TLS_KEY);
    Path trust = optionalPath(TLS_TRUST);
    return Tls.fromPem(cert, key, trust != null ? trust : cert);
  }

  private Path optionalPath(String key) {
    String v = get(key);
    return v.isEmpty() ? null : Path.of(v);
  }

  /**
   * The cluster credentials: the inline secret if set (the root), else the secret file: the root
   * {@code secret} or a {@code client.secret} ({@link Secrets#load}), with the role it holds.
   *
   * @throws IllegalArgumentException if neither is configured, with what to do about it
   */
  public Credentials credentials() {
    String hex = get(SECRET);
    byte[] secret;
    if (!hex.isEmpty()) {
      try {
        secret = HexFormat.of().parseHex(hex);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(SECRET + ": not hex", e);
      }
    } else if (!get(SECRET_FILE).isEmpty()) {
      return Secrets.load(clusterId(), Path.of(get(SECRET_FILE)));
    } else {
      throw new IllegalArgumentException(
          "no cluster secret: set "
              + SECRET_FILE
              + " (or "
              + envName(SECRET_FILE)
              + ", or --secret-file) to the file that 'ferrite local' or 'ferrite master' wrote");
    }
    return new Credentials(clusterId(), secret);
  }

  @Override
  public String toString() {
    return "FerriteConfig" + effective();
  }
}
