package io.ferrite.bench.tx;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Progress;
import io.ferrite.bench.kv.KvBench;
import io.ferrite.bench.kv.RedisPeer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * The bank-transfer workload of {@link Bank} on redis-server, with Redis's optimistic transactions:
 * the same accounts (keys {@code acct:<i>}, decimal balances), the same choice of accounts and
 * amounts from the same random stream, retried with the same accounts until it commits. One
 * transfer:
 *
 * <pre>
 *   WATCH a b; GET a; GET b        (pipelined: one round trip)
 *   MULTI; SET a; SET b; EXEC      (pipelined: one round trip); a nil EXEC = abort, try again
 * </pre>
 *
 * Each batch is pipelined, the strongest form of the peer (a client library sends WATCH and each
 * GET on its own round trip); Ferrite's transfer is two one-sided reads and one commit.
 */
final class RedisBank {
  private static final byte[] WATCH = ascii("WATCH");
  private static final byte[] GET = ascii("GET");
  private static final byte[] SET = ascii("SET");
  private static final byte[] MULTI = ascii("MULTI");
  private static final byte[] EXEC = ascii("EXEC");

  private final byte[][] keys;
  private final ThreadLocal<RedisPeer.Conn> conns;

  private RedisBank(RedisPeer redis, byte[][] keys) {
    this.keys = keys;
    this.conns = ThreadLocal.withInitial(redis::connect);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /** Sets {@code n} accounts to {@code initial}, pipelined in batches of 1 000. */
  static RedisBank create(RedisPeer redis, int n, long initial) {
    byte[][] keys = new byte[n][];
    for (int i = 0; i < n; i++) {
      keys[i] = ascii(String.format(Locale.ROOT, "acct:%d", i));
    }
    RedisPeer.Conn c = redis.connect();
    byte[] v = ascii(Long.toString(initial));
    for (int i = 0; i < n; i += 1000) {
      int m = Math.min(1000, n - i);
      for (int j = 0; j < m; j++) {
        c.command(SET, keys[i + j], v);
      }
      c.flush();
      for (int j = 0; j < m; j++) {
        c.readReply();
      }
    }
    return new RedisBank(redis, keys);
  }

  /** The Redis peer's transfers per thread count: its throughput results by thread count. */
  static Map<Integer, BenchResult> measure(
      BenchReport report, TxBench.Options o, Path root, Progress progress) throws Exception {
    progress.step("starting redis-server on 127.0.0.1, " + o.accounts() + " accounts");
    Map<Integer, BenchResult> out = new HashMap<>();
    try (RedisPeer redis = RedisPeer.start(root)) {
      RedisBank bank = create(redis, o.accounts(), TxBench.INITIAL);
      for (int threads : o.threads()) {
        String name = "redis.bank.t" + threads;
        progress.step(name + " (WATCH/MULTI/EXEC)");
        BankStats stats = new BankStats();
        KvBench.Result res = KvBench.drive(r -> bank.transfer(r, stats), threads, o.duration());
        TxBench.addBank(report, name, res, stats.snapshot(), null);
        out.put(threads, report.require(name + ".throughput"));
        long sum = bank.sum();
        if (sum != o.accounts() * TxBench.INITIAL) {
          throw new IllegalStateException(
              name
                  + ": the total is "
                  + sum
                  + " (expected: "
                  + o.accounts() * TxBench.INITIAL
                  + ")");
        }
      }
    }
    return out;
  }

  /** One transfer as {@link Bank#transfer}: the same draws from {@code r}. */
  void transfer(Random r, BankStats stats) {
    int n = keys.length;
    int from = r.nextInt(n);
    int to = r.nextInt(n - 1);
    if (to >= from) {
      to++;
    }
    long amount = 1 + r.nextInt(10);
    byte[] a = keys[from];
    byte[] b = keys[to];
    RedisPeer.Conn c = conns.get();
    while (true) {
      c.command(WATCH, a, b);
      c.command(GET, a);
      c.command(GET, b);
      c.flush();
      c.readReply();
      long ba = parse(c.readReply());
      long bb = parse(c.readReply());
      long moved = Math.min(amount, Math.max(0, ba));
      c.command(MULTI);
      c.command(SET, a, ascii(Long.toString(ba - moved)));
      c.command(SET, b, ascii(Long.toString(bb + moved)));
      c.command(EXEC);
      c.flush();
      c.readReply(); // +OK
      c.readReply(); // +QUEUED
      c.readReply(); // +QUEUED
      if (c.readArray() == 2) {
        stats.committed();
        return;
      }
      stats.aborted("EXEC nil");
    }
  }

  /** The sum of every balance (read after the transfers stopped). */
  long sum() {
    RedisPeer.Conn c = conns.get();
    long sum = 0;
    // In batches: a whole large pipeline would fill both socket buffers and stall.
    for (int i = 0; i < keys.length; i += 1000) {
      int m = Math.min(1000, keys.length - i);
      for (int j = 0; j < m; j++) {
        c.command(GET, keys[i + j]);
      }
      c.flush();
      for (int j = 0; j < m; j++) {
        sum += parse(c.readReply());
      }
    }
    return sum;
  }

  private static long parse(byte[] v) {
    if (v == null) {
      throw new IllegalStateException("redis: an account key is missing");
    }
    return Long.parseLong(new String(v, StandardCharsets.US_ASCII));
  }
}
