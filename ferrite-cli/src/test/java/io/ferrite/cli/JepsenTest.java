package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.testing.RegisterChecker;
import io.ferrite.kernel.testing.RegisterChecker.Op;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A Jepsen-style run across hosts ({@link NetHosts}): the master and the memory servers in network
 * namespaces of their own (separate JVMs), a kv writer and a file writer in the test JVM (the root
 * namespace, another host) under load, while a seeded schedule SIGKILLs and restarts memory servers
 * and the master, pauses one process with SIGSTOP for a while, and cuts a server's host off. At the
 * end every fault is undone, every acknowledged write is read back (files byte for byte), each kv
 * key's history passes the project's linearizability checker ({@link RegisterChecker}), and the
 * cluster serves new writes.
 *
 * <p>History: an acknowledged put is a write with its call and return times; a put that failed may
 * or may not have happened (the server may have applied it before dying, a retry may have landed),
 * so it is a write with no response ({@link Long#MAX_VALUE}); a failed get is left out (it changed
 * nothing). A file whose close failed is not checked (it may exist or not); a file whose close was
 * acknowledged must read back exactly.
 *
 * <p>The run's shape ({@link Spec}): masters (1, or a Raft group of 3 or more, each on its own
 * host, the schedule SIGKILLing its leader), kv replicas and file replicas. Both shapes expect no
 * acknowledged write lost (with one copy because a SIGKILLed server keeps its /dev/shm regions and
 * replays its kv log) and tolerate failed operations while no master leads.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class JepsenTest extends HostsClusterTest {
  static final String CLUSTER = "jepsen-test";
  static final int KEYS = 16;

  /** A victim standing for the master leader of the moment (the single master without a group). */
  private static final String LEADER = "the leader";

  /**
   * One run's shape.
   *
   * @param masters masters in the group (hosts 1..masters); more than 1 needs the Raft group
   * @param servers memory servers (the hosts after the masters')
   * @param kvReplicas copies of each kv shard (the table option {@code replicas}); 1 on main
   * @param fileReplicas copies of each file block (the nodes face's option); 1 on main
   * @param faults how long the schedule injects faults (the load runs through it)
   */
  record Spec(int masters, int servers, int kvReplicas, int fileReplicas, Duration faults) {
    /** The defaults, each overridable by {@code -Dferrite.jepsen.<name>=N} (faults in seconds). */
    static Spec fromProperties() {
      return new Spec(
          Integer.getInteger("ferrite.jepsen.masters", 1),
          Integer.getInteger("ferrite.jepsen.servers", 3),
          Integer.getInteger("ferrite.jepsen.kvReplicas", 1),
          Integer.getInteger("ferrite.jepsen.fileReplicas", 1),
          Duration.ofSeconds(Integer.getInteger("ferrite.jepsen.seconds", 25)));
    }
  }

  private Spec spec;
  private final Map<String, Process> running = new ConcurrentHashMap<>();
  private final Map<String, Integer> hostOf = new LinkedHashMap<>();
  private final List<String> schedule = new CopyOnWriteArrayList<>();
  private long t0;

  @Test
  void acknowledgedWritesSurviveKillsPausesAndPartitions(Random random) throws Exception {
    run(Spec.fromProperties(), random);
  }

  /**
   * The configuration issue #20 asks for: a Raft group of 3 masters (each on its own host; the
   * schedule SIGKILLs the leader), kv tables and Files with 2 copies of everything.
   */
  @Test
  void withAMasterGroupAndTwoCopiesOfEverything(Random random) throws Exception {
    run(
        new Spec(3, 3, 2, 2, Duration.ofSeconds(Integer.getInteger("ferrite.jepsen.seconds", 20))),
        random);
  }

  void run(Spec s, Random random) throws Exception {
    try {
      runUnchecked(s, random);
    } catch (Exception | AssertionError e) {
      if (schedule.isEmpty()) {
        throw e;
      }
      // Whatever failed, the schedule and the processes' logs say what the cluster went through.
      throw new AssertionError(e + "\n" + describe() + logs(), e);
    }
  }

  private void runUnchecked(Spec s, Random random) throws Exception {
    spec = s;
    Assumptions.assumeTrue(
        s.masters() == 1 || s.masters() >= 3,
        "masters " + s.masters() + ": a Raft group needs 3 or more to survive a SIGKILL");
    newHostsCluster(s.masters() + s.servers(), CLUSTER, "ferrite-jepsen-");
    t0 = System.nanoTime();
    for (int m = 1; m <= s.masters(); m++) {
      hostOf.put(masterName(m), m);
      startMaster(m);
    }
    for (int i = 1; i <= s.servers(); i++) {
      hostOf.put("s" + i, s.masters() + i);
      startServer(i);
    }
    if (s.masters() > 1) {
      await("a leader", () -> leaderHost(s.masters()));
    }
    await(s.servers() + " ALIVE servers", () -> serversAlive(groupUri(s.masters()), s.servers()));
    try (FerriteClient admin = client()) {
      new KvClient(admin).createTable("t", tableOptions());
    }

    Map<Integer, List<Op>> history = new ConcurrentHashMap<>();
    for (int k = 0; k < KEYS; k++) {
      history.put(k, Collections.synchronizedList(new ArrayList<>()));
    }
    AtomicInteger ids = new AtomicInteger();
    Map<String, byte[]> files = new ConcurrentHashMap<>(); // acknowledged: path -> content
    AtomicInteger kvAcks = new AtomicInteger();
    AtomicInteger kvUnknown = new AtomicInteger();
    AtomicInteger fileFailures = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    try (TestThreads load = new TestThreads(() -> stop.set(true))) {
      for (int w = 0; w < 2; w++) {
        long seed = random.nextLong();
        int writer = w;
        load.start(
            "jepsen-kv-" + w,
            () -> kvWriter(writer, new Random(seed), stop, history, ids, kvAcks, kvUnknown));
      }
      long fileSeed = random.nextLong();
      load.start("jepsen-files", () -> fileWriter(new Random(fileSeed), stop, files, fileFailures));
      faults(new Random(random.nextLong()), stop);
      stop.set(true);
    }
    healEverything();
    await(
        s.servers() + " ALIVE servers after the faults",
        () -> serversAlive(groupUri(s.masters()), s.servers()));

    // Every acknowledged file reads back whole; every key's last value joins its history.
    try (FerriteClient c = await("a client after the faults", this::client)) {
      Nodes nodes = new Nodes(c);
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        byte[] got = await(f.getKey() + " readable", () -> read(nodes, f.getKey()));
        assertArrayEquals(
            f.getValue(), got, "acknowledged file " + f.getKey() + "\n" + describe() + logs());
      }
      KvTable t = new KvClient(c).table("t");
      for (int k = 0; k < KEYS; k++) {
        int key = k;
        long call = System.nanoTime();
        byte[] v = await("key " + k + " readable", () -> new Answer(t.get(key(key)))).value;
        history.get(k).add(new Op(ids.getAndIncrement(), call, System.nanoTime(), false, value(v)));
      }
      // The cluster serves new writes.
      t.put(key(KEYS), "after".getBytes(StandardCharsets.UTF_8));
      assertArrayEquals("after".getBytes(StandardCharsets.UTF_8), t.get(key(KEYS)));
      write(nodes, "/jepsen/after", new byte[] {1, 2, 3});
      assertArrayEquals(new byte[] {1, 2, 3}, read(nodes, "/jepsen/after"));
    }
    for (int k = 0; k < KEYS; k++) {
      // Failed puts no read saw cannot matter (see RegisterChecker.pruned) and only cost search.
      List<Op> h = RegisterChecker.pruned(copy(history.get(k)));
      if (!RegisterChecker.check(h, RegisterChecker.ABSENT)) {
        fail(
            "key "
                + k
                + " is not linearizable:"
                + RegisterChecker.describe(h)
                + "\n"
                + describe()
                + logs());
      }
    }
    System.out.printf(
        Locale.ROOT,
        "jepsen run %s: kv %d acknowledged, %d unknown; files %d acknowledged, %d failed%n%s%n",
        s,
        kvAcks.get(),
        kvUnknown.get(),
        files.size(),
        fileFailures.get(),
        describe());
    assertTrue(kvAcks.get() > 0 && !files.isEmpty(), "the load made progress\n" + describe());
  }

  // ------------------------------------------------------------------ the cluster

  private static String masterName(int m) {
    return "master" + m;
  }

  private void startMaster(int m) throws Exception {
    String name = masterName(m);
    String[] sets = {"journal.fsync=true", "block.size=64k", "server.dead.timeout=2s"};
    running.put(
        name,
        spec.masters() == 1
            ? startMasterOn(m, name, sets)
            : startGroupMasterOn(m, spec.masters(), name, sets));
  }

  private void startServer(int i) throws Exception {
    String name = "s" + i;
    // The master's block size: a server with another keeps its block keys off (BAD_RKEY). And
    // its dead timeout: a server's kv lease (kv.lease auto) is half of its own.
    running.put(
        name,
        startServerOn(
            hostOf.get(name),
            groupUri(spec.masters()),
            name,
            "256m",
            "0",
            "block.size=64k",
            "server.dead.timeout=2s"));
  }

  private void restart(String name) throws Exception {
    if (name.startsWith("master")) {
      startMaster(Integer.parseInt(name.substring("master".length())));
    } else {
      startServer(Integer.parseInt(name.substring(1)));
    }
  }

  /** The kv table: 4 shards, durability {@code always}, {@link Spec#kvReplicas} copies. */
  private TableOptions tableOptions() {
    return TableOptions.DEFAULTS
        .withReplicas(spec.kvReplicas())
        .withShards(4)
        .withSlotsPerShard(4096)
        .withExtents(1 << 20, 4)
        .withLimits(64, 1024)
        .withDurability(TableOptions.Durability.ALWAYS);
  }

  private FerriteClient client() {
    return Ferrite.connect(
        groupUri(spec.masters()),
        ClientOptions.builder(credentials)
            .clientName("jepsen")
            .connectTimeout(Duration.ofSeconds(2))
            .rpcTimeout(Duration.ofSeconds(2))
            .opTimeout(Duration.ofSeconds(2))
            .build());
  }

  // ------------------------------------------------------------------ the schedule

  private void log(String event) {
    schedule.add(
        String.format(Locale.ROOT, "%6d ms %s", (System.nanoTime() - t0) / 1_000_000, event));
  }

  private String describe() {
    return "schedule:\n  " + String.join("\n  ", schedule) + "\n";
  }

  /** What the schedule does to a process: SIGKILL and restart, SIGSTOP and SIGCONT, cut off. */
  enum Fault {
    KILL,
    PAUSE,
    ISOLATE
  }

  /**
   * Until {@link Spec#faults} has passed (or the load failed): every 1-3 s one seeded fault, undone
   * 0.5-2.5 s later. The first ones, in a seeded order, are one of each the run must see — the
   * master SIGKILLed (with a group: its leader at that moment, found by MASTER_INFO), a server
   * SIGKILLed, a process paused, a server's host cut off — and the rest are drawn at random (a
   * SIGKILL or a pause of any process, a server's host cut off). One fault at a time, so a group
   * never loses more than one master at once.
   */
  private void faults(Random rnd, AtomicBoolean stop) throws Exception {
    long end = System.nanoTime() + spec.faults().toNanos();
    List<String> names = new ArrayList<>(hostOf.keySet());
    List<String> servers = names.stream().filter(n -> !n.startsWith("master")).toList();
    List<Map.Entry<Fault, String>> must =
        new ArrayList<>(
            List.of(
                Map.entry(Fault.KILL, LEADER),
                Map.entry(Fault.KILL, servers.get(rnd.nextInt(servers.size()))),
                Map.entry(Fault.PAUSE, names.get(rnd.nextInt(names.size()))),
                Map.entry(Fault.ISOLATE, servers.get(rnd.nextInt(servers.size())))));
    Collections.shuffle(must, rnd);
    while ((System.nanoTime() < end || !must.isEmpty()) && !stop.get()) {
      Thread.sleep(1000 + rnd.nextInt(2000));
      Fault fault;
      String victim;
      if (!must.isEmpty()) {
        fault = must.get(0).getKey();
        victim = must.remove(0).getValue();
      } else {
        victim = names.get(rnd.nextInt(names.size()));
        fault = Fault.values()[rnd.nextInt(victim.startsWith("master") ? 2 : 3)];
      }
      long down = 500 + rnd.nextInt(2000);
      if (victim.equals(LEADER)) {
        Integer leader = spec.masters() == 1 ? Integer.valueOf(1) : leaderHost(spec.masters());
        // No leader right now (an election under way): any master, the schedule goes on.
        victim = masterName(leader != null ? leader : 1 + rnd.nextInt(spec.masters()));
        log("the leader is " + victim + (leader != null ? "" : " (none found: drawn)"));
      }
      switch (fault) {
        case KILL -> {
          log("SIGKILL " + victim);
          Process p = running.remove(victim);
          p.destroyForcibly().waitFor();
          Thread.sleep(down);
          log("restart " + victim);
          restart(victim);
        }
        case PAUSE -> {
          log("SIGSTOP " + victim);
          NetHosts.signal(running.get(victim), "STOP");
          Thread.sleep(down);
          log("SIGCONT " + victim);
          NetHosts.signal(running.get(victim), "CONT");
        }
        case ISOLATE -> {
          log("isolate host " + hostOf.get(victim) + " (" + victim + ")");
          hosts.isolate(hostOf.get(victim));
          Thread.sleep(down);
          log("heal host " + hostOf.get(victim));
          hosts.heal(hostOf.get(victim));
        }
      }
    }
  }

  /** Every process running and continued, every host linked (idempotent). */
  private void healEverything() throws Exception {
    for (String name : hostOf.keySet()) {
      hosts.heal(hostOf.get(name));
      Process p = running.get(name);
      if (p == null || !p.isAlive()) {
        log("restart " + name + " (after the schedule)");
        restart(name);
      } else {
        NetHosts.signal(p, "CONT");
      }
    }
  }

  // ------------------------------------------------------------------ the load

  static byte[] key(int k) {
    return ("key-" + k).getBytes(StandardCharsets.UTF_8);
  }

  static long value(byte[] v) {
    return v == null ? RegisterChecker.ABSENT : ByteBuffer.wrap(v).getLong();
  }

  /** A value holder, so that a probe may answer "absent" (null) and still count as an answer. */
  record Answer(byte[] value) {}

  /**
   * Puts of unique values and gets of {@link #KEYS} keys, each recorded in its key's history; on a
   * failure the client is rebuilt (the master may be gone for a while).
   */
  private void kvWriter(
      int writer,
      Random rnd,
      AtomicBoolean stop,
      Map<Integer, List<Op>> history,
      AtomicInteger ids,
      AtomicInteger acks,
      AtomicInteger unknown)
      throws Exception {
    long seq = 0;
    FerriteClient c = null;
    KvTable t = null;
    try {
      while (!stop.get()) {
        if (t == null) {
          try {
            c = client();
            t = new KvClient(c).table("t");
          } catch (FerriteException e) {
            closeQuietly(c);
            c = null;
            Thread.sleep(100);
            continue;
          }
        }
        int k = rnd.nextInt(KEYS);
        boolean write = rnd.nextBoolean();
        long v = ((long) writer << 40) | ++seq; // unique per run, never ABSENT
        long call = System.nanoTime();
        try {
          if (write) {
            t.put(key(k), ByteBuffer.allocate(8).putLong(0, v).array());
            history.get(k).add(new Op(ids.getAndIncrement(), call, System.nanoTime(), true, v));
            acks.incrementAndGet();
          } else {
            long got = value(t.get(key(k)));
            history.get(k).add(new Op(ids.getAndIncrement(), call, System.nanoTime(), false, got));
          }
        } catch (FerriteException e) {
          if (write) {
            // Applied or not: the checker may place it anywhere after its call, or nowhere.
            history.get(k).add(new Op(ids.getAndIncrement(), call, Long.MAX_VALUE, true, v));
            unknown.incrementAndGet();
          }
          closeQuietly(c);
          c = null;
          t = null;
          Thread.sleep(50);
        }
      }
    } finally {
      closeQuietly(c);
    }
  }

  /** Files of 16-200 KiB written, closed and read back; acknowledged ones kept for the end. */
  private void fileWriter(
      Random rnd, AtomicBoolean stop, Map<String, byte[]> files, AtomicInteger failures)
      throws Exception {
    FerriteClient c = null;
    Nodes nodes = null;
    try {
      for (int i = 0; !stop.get(); i++) {
        if (nodes == null) {
          try {
            c = client();
            nodes = new Nodes(c);
            nodes.mkdirs("/jepsen");
          } catch (FerriteException e) {
            closeQuietly(c);
            c = null;
            nodes = null;
            Thread.sleep(100);
            continue;
          }
        }
        byte[] data = new byte[16_384 + rnd.nextInt(200_000)];
        rnd.nextBytes(data);
        String path = "/jepsen/f-" + i;
        try {
          write(nodes, path, data);
        } catch (FerriteException e) {
          if (e.code() == io.ferrite.fabric.ErrorCode.NO_SPACE) {
            // A full store is not a fault under test (a fast machine writes more files than the
            // servers hold): stop writing files, keep everything written for the final check.
            break;
          }
          failures.incrementAndGet(); // not acknowledged: may exist or not
          closeQuietly(c);
          c = null;
          nodes = null;
          Thread.sleep(50);
          continue;
        }
        files.put(path, data);
        try {
          assertArrayEquals(data, read(nodes, path), "read back right after its close: " + path);
        } catch (FerriteException e) {
          closeQuietly(c); // unavailable now; checked again at the end
          c = null;
          nodes = null;
        }
      }
    } finally {
      closeQuietly(c);
    }
  }

  private void write(Nodes nodes, String path, byte[] data) {
    try (NodeWriter w = nodes.create(path, CreateOptions.replicated(spec.fileReplicas()))) {
      w.writeSync(ByteBuffer.wrap(data));
    }
  }

  private static byte[] read(Nodes nodes, String path) {
    NodeReader r = nodes.open(path);
    ByteBuffer b = ByteBuffer.allocate((int) r.size());
    r.readFully(0, b);
    return b.array();
  }

  private static void closeQuietly(FerriteClient c) {
    if (c != null) {
      try {
        c.close();
      } catch (RuntimeException e) {
        // The master or a server is gone: nothing more to release.
      }
    }
  }

  /** A copy of a history the writers filled (their list is synchronized). */
  private static List<Op> copy(List<Op> h) {
    synchronized (h) {
      return new ArrayList<>(h);
    }
  }
}
