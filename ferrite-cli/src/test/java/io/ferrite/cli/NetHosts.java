package io.ferrite.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;

/**
 * Hosts for the multi-host tests: N Linux network namespaces on this machine, each with its own
 * network stack (so its own loopback, ports and host identity: see {@code HostIdentity}), joined by
 * veth pairs to one bridge, like N machines on one switch.
 *
 * <pre>
 *   test JVM (root namespace) 10.77.S.254 ── bridge fr&lt;pid&gt;br ─┬─ fr&lt;pid&gt;v1 ═ eth0 10.77.S.1  (ferrite-&lt;pid&gt;-h1)
 *                                                          ├─ fr&lt;pid&gt;v2 ═ eth0 10.77.S.2  (ferrite-&lt;pid&gt;-h2)
 *                                                          └─ ...
 * </pre>
 *
 * The subnet {@code 10.77.S.0/24} is the first one no other interface uses (S from this JVM's pid);
 * no address outside this machine is ever used. The test JVM sits on the bridge too, so it can be a
 * client of its own (a host apart from every namespace). Everything is named after this JVM's pid,
 * and {@link #close()} removes it; namespaces and bridges left by an earlier run that crashed (its
 * pid gone) are removed when the next one starts.
 *
 * <p>Faults: {@link #isolate}/{@link #heal} take a host's link down and up (packets to and from it
 * are dropped, open connections see silence, not a reset: a real partition); SIGSTOP, SIGCONT and
 * SIGKILL through {@link #signal}. This machine has neither iptables nor {@code tc netem}, so the
 * link is the one switch; add delay here when a machine has netem.
 *
 * <p>Needs root (CAP_NET_ADMIN) and iproute2: where the kernel refuses, {@link #create} aborts the
 * calling test with {@link Assumptions} and says why.
 */
final class NetHosts implements AutoCloseable {
  private static final Pattern OURS = Pattern.compile("ferrite-(\\d+)-h\\d+");
  private static final Pattern OUR_BRIDGE = Pattern.compile("\\d+: (fr(\\d+)br)[:@]");

  private final String tag;
  private final int subnet;
  private final int count;
  private boolean closed;

  private NetHosts(String tag, int subnet, int count) {
    this.tag = tag;
    this.subnet = subnet;
    this.count = count;
  }

  /**
   * Makes {@code count} hosts (1..count) on a new bridge, after removing what crashed runs left.
   * Aborts the test if namespaces cannot be made here.
   */
  static NetHosts create(int count) throws IOException, InterruptedException {
    if (count < 1 || count > 200) {
      throw new IllegalArgumentException("count: " + count + " (expected: 1..200)");
    }
    sweepLeftovers();
    long pid = ProcessHandle.current().pid();
    String tag = Long.toString(pid);
    Run probe = run("ip", "netns", "add", "ferrite-" + tag + "-h1");
    Assumptions.assumeTrue(
        probe.code() == 0,
        "network namespaces refused here (needs root and iproute2): " + probe.out());
    NetHosts h = new NetHosts(tag, freeSubnet(pid), count);
    try {
      h.build();
    } catch (IOException | RuntimeException | InterruptedException | Error e) {
      h.close();
      throw e;
    }
    return h;
  }

  private void build() throws IOException, InterruptedException {
    must("ip", "link", "add", bridge(), "type", "bridge");
    must("ip", "addr", "add", "10.77." + subnet + ".254/24", "dev", bridge());
    must("ip", "link", "set", bridge(), "up");
    for (int h = 1; h <= count; h++) {
      if (h > 1) {
        must("ip", "netns", "add", ns(h));
      }
      must("ip", "link", "add", veth(h), "type", "veth", "peer", "name", "eth0", "netns", ns(h));
      must("ip", "link", "set", veth(h), "master", bridge(), "up");
      must("ip", "-n", ns(h), "addr", "add", address(h) + "/24", "dev", "eth0");
      must("ip", "-n", ns(h), "link", "set", "eth0", "up");
      must("ip", "-n", ns(h), "link", "set", "lo", "up");
    }
  }

  /** The number of hosts: 1..{@code count()}. */
  int count() {
    return count;
  }

  /** The namespace of host {@code h}. */
  String ns(int h) {
    return "ferrite-" + tag + "-h" + h;
  }

  /** Host {@code h}'s address on the bridge. */
  String address(int h) {
    checkHost(h);
    return "10.77." + subnet + "." + h;
  }

  /** The test JVM's own address on the bridge (the root namespace is a host of its own). */
  String rootAddress() {
    return "10.77." + subnet + ".254";
  }

  /** The words that run a command inside host {@code h}: {@code ip netns exec <ns>}. */
  List<String> exec(int h) {
    checkHost(h);
    return List.of("ip", "netns", "exec", ns(h));
  }

  /**
   * Cuts host {@code h} off: its link to the bridge goes down, so every packet to or from it is
   * dropped (its processes keep running and see silence, like behind a failed switch port).
   */
  void isolate(int h) throws IOException, InterruptedException {
    checkHost(h);
    must("ip", "link", "set", veth(h), "down");
  }

  /** Undoes {@link #isolate}: the link comes back up. */
  void heal(int h) throws IOException, InterruptedException {
    checkHost(h);
    must("ip", "link", "set", veth(h), "up");
  }

  /** Sends {@code signal} ("STOP", "CONT", "KILL") to {@code p}. */
  static void signal(Process p, String signal) throws IOException, InterruptedException {
    must("kill", "-" + signal, Long.toString(p.pid()));
  }

  /**
   * Removes every host and the bridge; processes still inside a namespace are SIGKILLed first (the
   * test's own cleanup stops them earlier; this catches anything it missed).
   */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      remove(tag);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while removing the hosts of run " + tag, e);
    }
  }

  private static void remove(String tag) throws IOException, InterruptedException {
    // The root ends of the veths first, each taking its peer with it at once. Left to go with their
    // namespaces they linger: a namespace dies only when its last process has (a SIGKILLed JVM
    // takes a while) and the kernel then cleans it up in the background, so the next test of this
    // JVM, which reuses the names, found "fr<pid>v1" still there (RTNETLINK: File exists).
    Matcher v =
        Pattern.compile("\\d+: (fr" + tag + "v\\d+)[:@]")
            .matcher(run("ip", "-o", "link", "show").out());
    while (v.find()) {
      run("ip", "link", "del", v.group(1));
    }
    for (String ns : namespaces()) {
      Matcher m = OURS.matcher(ns);
      if (m.matches() && m.group(1).equals(tag)) {
        Run pids = run("ip", "netns", "pids", ns);
        for (String pid : pids.out().trim().split("\\s+")) {
          if (!pid.isEmpty()) {
            run("kill", "-KILL", pid);
          }
        }
        run("ip", "netns", "del", ns);
      }
    }
    // The veths went with their namespaces; the bridge is in the root namespace.
    run("ip", "link", "del", "fr" + tag + "br");
  }

  /** Removes the hosts and bridges of runs whose JVM is gone (a crash, a kill -9 of the build). */
  private static void sweepLeftovers() throws IOException, InterruptedException {
    List<String> dead = new ArrayList<>();
    for (String ns : namespaces()) {
      Matcher m = OURS.matcher(ns);
      if (m.matches() && !alive(m.group(1)) && !dead.contains(m.group(1))) {
        dead.add(m.group(1));
      }
    }
    Matcher b = OUR_BRIDGE.matcher(run("ip", "-o", "link", "show").out());
    while (b.find()) {
      if (!alive(b.group(2)) && !dead.contains(b.group(2))) {
        dead.add(b.group(2));
      }
    }
    for (String tag : dead) {
      remove(tag);
    }
  }

  private static boolean alive(String pid) {
    return ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false);
  }

  private static List<String> namespaces() throws IOException, InterruptedException {
    List<String> out = new ArrayList<>();
    for (String line : run("ip", "netns", "list").out().split("\n")) {
      String name = line.trim().split("\\s+")[0];
      if (!name.isEmpty()) {
        out.add(name);
      }
    }
    return out;
  }

  /** The first 10.77.S.0/24 no interface of this machine uses, S starting from {@code pid}. */
  private static int freeSubnet(long pid) throws IOException, InterruptedException {
    String used = run("ip", "-o", "-4", "addr", "show").out();
    for (int i = 0; i < 250; i++) {
      int s = (int) ((pid + i) % 250) + 1;
      if (!used.contains(" 10.77." + s + ".")) {
        return s;
      }
    }
    throw new IllegalStateException("every 10.77.S.0/24 is in use:\n" + used);
  }

  private String bridge() {
    return "fr" + tag + "br";
  }

  /** The root side of host {@code h}'s veth pair (interface names are at most 15 characters). */
  private String veth(int h) {
    return "fr" + tag + "v" + h;
  }

  private void checkHost(int h) {
    if (h < 1 || h > count) {
      throw new IllegalArgumentException("host: " + h + " (expected: 1.." + count + ")");
    }
  }

  /** What a command exited with and printed (stdout and stderr). */
  record Run(int code, String out) {}

  static Run run(String... cmd) throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    } catch (IOException e) {
      return new Run(127, cmd[0] + ": " + e.getMessage());
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor();
      return new Run(124, String.join(" ", cmd) + ": hung\n" + out);
    }
    return new Run(p.exitValue(), out);
  }

  private static void must(String... cmd) throws IOException, InterruptedException {
    Run r = run(cmd);
    if (r.code() != 0) {
      throw new IOException(String.join(" ", cmd) + " exited " + r.code() + ": " + r.out());
    }
  }
}
