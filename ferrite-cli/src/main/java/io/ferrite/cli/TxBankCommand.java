package io.ferrite.cli;

import io.ferrite.bench.tx.Bank;
import io.ferrite.bench.tx.BankStats;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.tx.TxClient;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ferrite tx bank}: the bank-transfer workload ({@link Bank}) against a cluster, progress
 * every second, and the invariant checked at the end: PASS (exit code 0) or FAIL (exit code 1).
 */
@Command(
    name = "bank",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Creates --accounts accounts of --balance each, spread over the memory servers, then runs"
          + " --clients threads for --duration, each doing transfers: a transaction reads two"
          + " accounts drawn at random and writes both (1 to 10 units from one to the other), and"
          + " is tried again with the same accounts until it commits.",
      "Every second it prints the transfers committed per second and the share of attempts that"
          + " aborted, by reason: LOCKED (an account was locked by another commit), VALIDATION (it"
          + " changed since it was read), others when servers fail.",
      "At the end it reads the sum of every balance in one transaction, and again by lock-free"
          + " reads, and prints PASS when both equal accounts x balance (transfers move money,"
          + " never make it), else FAIL with exit code 1. The accounts are freed afterwards"
          + " unless --keep."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite tx bank --duration 2s              30 s without --duration",
      "  ferrite tx bank --accounts 20 --clients 8 --duration 2s   many aborts",
      "  ferrite tx bank --accounts 5000 --clients 16 --duration 2s --seed 42",
      "",
      "Output (one line a second, then the check):",
      "  3s  41,230 transfers/s  aborts 0.41%% (LOCKED 0.33%%, VALIDATION 0.08%%)",
      "  PASS: 1000 balances sum to 1000000 (in one transaction; by lock-free reads)"
    })
final class TxBankCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ClusterTarget target;

  @Option(
      names = "--accounts",
      paramLabel = "N",
      defaultValue = "1000",
      description = "Accounts, >= 2; fewer means more conflicts (default: 1000).")
  int accounts;

  @Option(
      names = "--clients",
      paramLabel = "N",
      defaultValue = "4",
      description = "Client threads doing transfers, 1 to 1024 (default: 4).")
  int clients;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      defaultValue = "30s",
      converter = DurationConverter.class,
      description = "How long the transfers run, e.g. 10s, 2m (default: 30s).")
  Duration duration;

  @Option(
      names = "--balance",
      paramLabel = "N",
      defaultValue = "1000",
      description = "Initial balance of each account, >= 0 (default: 1000).")
  long balance;

  @Option(
      names = "--seed",
      paramLabel = "N",
      description = "Seed of the random choices (default: random, printed).")
  Long seed;

  @Option(names = "--keep", description = "Keep the accounts at the end (default: free them).")
  boolean keep;

  private CommandLine.ParameterException invalid(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  @Override
  public Integer call() throws InterruptedException {
    if (accounts < 2) {
      throw invalid("--accounts: " + accounts + " (expected: >= 2: a transfer needs two)");
    }
    if (clients < 1 || clients > 1024) {
      throw invalid("--clients: " + clients + " (expected: 1 to 1024)");
    }
    if (duration.isNegative() || duration.isZero()) {
      throw invalid("--duration: " + duration.toMillis() + "ms (expected: > 0, e.g. 10s)");
    }
    if (balance < 0) {
      throw invalid("--balance: " + balance + " (expected: >= 0)");
    }
    long s = seed != null ? seed : new Random().nextLong();
    return target.<Integer, InterruptedException>withClient(
        Role.CLIENT, "ferrite-tx", false, c -> run(c, s));
  }

  private int run(FerriteClient client, long s) throws InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    TxClient tx = new TxClient(client);
    // One tx client per live server: each allocates in a region of its own, which the master
    // places on the server with the fewest, so the accounts spread over every server.
    List<TxClient> creators = new ArrayList<>();
    creators.add(tx);
    long live = client.members().stream().filter(m -> m.state() == ServerState.ALIVE).count();
    for (int i = 1; i < live; i++) {
      creators.add(new TxClient(client));
    }
    out.printf(
        Locale.ROOT,
        "creating %d accounts of %d on %d server(s); %d client(s) for %s, seed %d%n",
        accounts,
        balance,
        live,
        clients,
        duration.toMillis() % 1000 == 0 ? duration.toSeconds() + " s" : duration.toMillis() + " ms",
        s);
    out.flush();
    Bank bank = Bank.create(creators, accounts, balance);
    BankStats stats = new BankStats();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    long start = System.nanoTime();
    long end = start + duration.toNanos();
    try {
      for (int i = 0; i < clients; i++) {
        Random r = new Random(s + i);
        Thread t =
            new Thread(
                () -> {
                  try {
                    while (!stop.get() && System.nanoTime() < end) {
                      bank.transfer(tx, r, stats, end);
                    }
                  } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                    stop.set(true);
                  }
                },
                "tx-bank-" + i);
        t.setDaemon(true);
        t.start();
        threads.add(t);
      }
      BankStats.Snapshot last = stats.snapshot();
      long lastAt = start;
      for (int second = 1; !stop.get(); second++) {
        long next = Math.min(end, start + second * 1_000_000_000L);
        while (!stop.get() && System.nanoTime() < next) {
          Thread.sleep(Math.max(1, (next - System.nanoTime()) / 1_000_000));
        }
        long now = System.nanoTime();
        BankStats.Snapshot snap = stats.snapshot();
        BankStats.Snapshot d = snap.minus(last);
        out.printf(
            Locale.ROOT,
            "%3ds  %,.0f transfers/s  aborts %.2f%% (%s)%n",
            second,
            d.commits() / ((now - lastAt) / 1e9),
            d.abortPercent(),
            d.abortsByReason());
        out.flush();
        last = snap;
        lastAt = now;
        if (now >= end) {
          break;
        }
      }
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    if (failed.get() != null) {
      // FerriteCli prints what failed (a FerriteException names its code), exit code 1.
      throw new IllegalStateException("a transfer failed: " + failed.get(), failed.get());
    }
    BankStats.Snapshot total = stats.snapshot();
    double secs = (System.nanoTime() - start) / 1e9;
    out.printf(
        Locale.ROOT,
        "total: %,d transfers in %.1f s (%,.0f/s), aborts %.2f%% (%s)%n",
        total.commits(),
        secs,
        total.commits() / secs,
        total.abortPercent(),
        total.abortsByReason());
    long inTx = bank.sumInTransaction(tx, new BankStats());
    long lockFree = bank.sumLockFree(tx);
    long expected = bank.expectedTotal();
    boolean pass = inTx == expected && lockFree == expected;
    if (pass) {
      out.printf(
          Locale.ROOT,
          "PASS: %d balances sum to %d (in one transaction; by lock-free reads)%n",
          accounts,
          expected);
    } else {
      out.printf(
          Locale.ROOT,
          "FAIL: %d balances should sum to %d: %d in one transaction, %d by lock-free reads%n",
          accounts,
          expected,
          inTx,
          lockFree);
    }
    out.flush();
    if (!keep) {
      bank.free(tx);
    }
    return pass ? 0 : 1;
  }
}
