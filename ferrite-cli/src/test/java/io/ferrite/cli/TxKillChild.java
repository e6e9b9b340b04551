package io.ferrite.cli;

import io.ferrite.kernel.testing.TxHistory;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The client JVM of {@link TxKillMultiProcessTest} ({@link TxKillClient}) and what it printed: its
 * finished transactions go into the test's history as their O lines arrive; those whose C line has
 * no O line when it died are in flight ({@link #endHistory} adds them as UNKNOWN). With {@link
 * #killAtNextCommit} set, the thread reading its lines SIGKILLs it as it starts a two-server
 * commit.
 */
final class TxKillChild {
  /** History client numbers of its threads: this + the thread's index. */
  static final int CLIENTS = 10;

  final TxHistory history;
  final Process process;
  final AtomicBoolean killAtNextCommit = new AtomicBoolean();
  volatile long killDelayNanos;
  final AtomicLong committed = new AtomicLong();
  final Map<Integer, TxKillBank.Step> inFlight = new ConcurrentHashMap<>();
  final Map<Integer, Integer> threads = new ConcurrentHashMap<>();
  final ConcurrentLinkedQueue<Long> commitInvokes = new ConcurrentLinkedQueue<>();
  final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
  volatile long killedAt;
  volatile boolean ended;

  TxKillChild(Process process, TxHistory history) {
    this.process = process;
    this.history = history;
  }

  /**
   * Closes its stdin (it stops, prints END and exits) and waits for it; SIGKILLs it if it did not
   * exit within 60 s. A no-op for a client already dead.
   */
  void stop() throws InterruptedException {
    try {
      process.getOutputStream().close();
    } catch (IOException e) {
      // Its pipe is gone: it died.
    }
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.toHandle().destroyForcibly();
      process.waitFor();
    }
  }

  /** Reads the client's lines until it exits, recording each finished transaction. */
  void readLines() throws IOException {
    try (BufferedReader in =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        String[] f = line.split(" ");
        switch (f[0]) {
          case "C" -> {
            if (killAtNextCommit.get() && killedAt == 0 && twoServers(f[4])) {
              // SIGKILL as it runs a two-phase commit: this line was printed just before
              // txCommit; a seeded pause of 0.2-2 ms lets it reach LOCK (at both primaries,
              // over tcp, with the backups' acknowledgements) so that it most often dies
              // holding locks. Through the handle: Process.destroy* would close the stream
              // this thread still reads what the client printed from.
              LockSupport.parkNanos(killDelayNanos);
              killedAt = System.nanoTime();
              process.toHandle().destroyForcibly();
            }
            int id = Integer.parseInt(f[1]);
            threads.put(id, CLIENTS + Integer.parseInt(f[2]));
            inFlight.put(
                id,
                new TxKillBank.Step(
                    null,
                    Long.parseLong(f[3]),
                    TxKillBank.decodeOps(f[4]),
                    List.of(),
                    new long[0]));
          }
          case "O" -> {
            int id = Integer.parseInt(f[1]);
            TxKillBank.Step s = inFlight.remove(id);
            Outcome o = Outcome.valueOf(f[2]);
            long complete = Long.parseLong(f[3]);
            TxKillBank.record(history, threads.get(id), s, o, complete);
            if (o == Outcome.COMMITTED) {
              committed.incrementAndGet();
              commitInvokes.add(s.invoke());
            }
          }
          case "END" -> ended = true;
          default -> failures.add(line);
        }
      }
    }
  }

  /** Whether ops (a C line's) write accounts of both regions (even and odd accounts). */
  boolean twoServers(String ops) {
    Set<Long> regionsWritten = new HashSet<>();
    for (TxHistory.Op op : TxKillBank.decodeOps(ops)) {
      if (op.kind() == TxHistory.Kind.WRITE) {
        regionsWritten.add(op.key() % 2);
      }
    }
    return regionsWritten.size() == 2;
  }

  long committedAfter(long since) {
    return commitInvokes.stream().filter(t -> t > since).count();
  }

  /** Accounts written by the commits in flight when the client died. */
  Set<Integer> inFlightWrites() {
    Set<Integer> out = new HashSet<>();
    for (TxKillBank.Step s : inFlight.values()) {
      s.ops().stream()
          .filter(op -> op.kind() == TxHistory.Kind.WRITE)
          .forEach(op -> out.add((int) op.key()));
    }
    return out;
  }

  /** The commits still in flight (the client died in them) go into the history as UNKNOWN. */
  void endHistory() {
    for (Map.Entry<Integer, TxKillBank.Step> e : inFlight.entrySet()) {
      TxKillBank.record(
          history, threads.get(e.getKey()), e.getValue(), Outcome.UNKNOWN, Long.MAX_VALUE);
    }
  }
}
