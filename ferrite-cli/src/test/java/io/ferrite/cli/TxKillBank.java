package io.ferrite.cli;

import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.testing.TxHistory;
import io.ferrite.kernel.testing.TxHistory.Op;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.Transaction;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The bank workload of {@link TxKillMultiProcessTest}, shared by the test's JVM and the client JVM
 * it SIGKILLs ({@link TxKillClient}): accounts of 16 bytes (the balance, then the tag of the
 * transaction that wrote it), transfers and audits as steps whose history ops are known before the
 * commit, and the line a client JVM prints for each.
 *
 * <p>Versions in the history are as in ferrite-tx's TxBankTest: FaRM's object version × 2^20 + the
 * writer's tag (unique per transaction across every JVM of the run), because FaRM installs version
 * read + 1, so an aborted or UNKNOWN transfer claims the same FaRM version as the commit that
 * really installed it; the tag (written into the payload, read back by every reader) tells them
 * apart and the high bits keep the key's version order. Account {@code i} is key {@code i} of the
 * history.
 */
final class TxKillBank {
  static final int ACCOUNTS = 12;
  static final long START = 100;
  static final int TAG_BITS = 20;

  /** The first tag of the client JVM (the test's JVM counts up from 1 below it). */
  static final long CHILD_TAGS = 1L << 19;

  private TxKillBank() {}

  /** An account's payload. */
  static byte[] account(long balance, long tag) {
    return ByteBuffer.allocate(16)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putLong(0, balance)
        .putLong(8, tag)
        .array();
  }

  static long balance(byte[] account) {
    return ByteBuffer.wrap(account).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
  }

  static long tag(byte[] account) {
    return ByteBuffer.wrap(account).order(ByteOrder.LITTLE_ENDIAN).getLong(8);
  }

  /** The version a history records (see the class comment). */
  static long version(long farmVersion, long tag) {
    if (tag < 0 || tag >= 1L << TAG_BITS) {
      throw new IllegalArgumentException(
          "tag: " + tag + " (expected: >= 0 and < 2^" + TAG_BITS + ")");
    }
    return farmVersion << TAG_BITS | tag;
  }

  /**
   * A transaction read (and written) but not committed yet: its history ops are what it read and
   * what its commit installs (read + 1: it reads all it writes first), known before the commit so a
   * client JVM can print them before it starts committing.
   */
  record Step(Transaction t, long invoke, List<Op> ops, List<Integer> written, long[] balances) {}

  /**
   * A transfer of 0-19 from one random account to another (nothing written when the source has too
   * little).
   *
   * @throws FerriteException when a read failed (nothing was sent for commit)
   */
  static Step transfer(TxClient c, Random r, List<FatPointer> accounts, long tag) {
    int from = r.nextInt(ACCOUNTS);
    int to = (from + 1 + r.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
    long amount = r.nextInt(20);
    long invoke = System.nanoTime();
    Transaction t = c.txBegin();
    byte[] x = t.txRead(accounts.get(from));
    byte[] y = t.txRead(accounts.get(to));
    List<Op> ops = new ArrayList<>();
    ops.add(Op.read(from, version(t.readVersions().get(accounts.get(from)), tag(x))));
    ops.add(Op.read(to, version(t.readVersions().get(accounts.get(to)), tag(y))));
    List<Integer> written = new ArrayList<>();
    if (balance(x) >= amount) {
      t.txWrite(accounts.get(from), account(balance(x) - amount, tag));
      t.txWrite(accounts.get(to), account(balance(y) + amount, tag));
      for (int i : List.of(from, to)) {
        ops.add(Op.write(i, version(t.writtenVersions().get(accounts.get(i)), tag)));
        written.add(i);
      }
    }
    return new Step(t, invoke, ops, written, new long[] {balance(x), balance(y)});
  }

  /**
   * A read-only transaction over every account.
   *
   * @throws FerriteException when a read failed
   */
  static Step audit(TxClient c, List<FatPointer> accounts) {
    long invoke = System.nanoTime();
    Transaction t = c.txBegin();
    List<Op> ops = new ArrayList<>();
    long[] balances = new long[ACCOUNTS];
    for (int i = 0; i < ACCOUNTS; i++) {
      byte[] a = t.txRead(accounts.get(i));
      balances[i] = balance(a);
      ops.add(Op.read(i, version(t.readVersions().get(accounts.get(i)), tag(a))));
    }
    return new Step(t, invoke, ops, List.of(), balances);
  }

  /**
   * Commits {@code s}: an exception out of txCommit (a lost answer, a dead participant after the
   * decision could have been taken) leaves the outcome unknown, whatever its code.
   */
  static Outcome commit(Step s) {
    try {
      TxResult r = s.t().txCommit();
      return r.committed() ? Outcome.COMMITTED : Outcome.ABORTED;
    } catch (FerriteException e) {
      return Outcome.UNKNOWN;
    }
  }

  /** Adds a finished step to {@code history}. */
  static TxHistory.Txn record(
      TxHistory history, int client, Step s, Outcome outcome, long complete) {
    return history.record(client, s.invoke(), complete, outcome, s.ops());
  }

  /** {@code accounts} as one argument: region:offset:size:incarnation,... */
  static String encode(List<FatPointer> accounts) {
    StringBuilder sb = new StringBuilder();
    for (FatPointer p : accounts) {
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(p.region())
          .append(':')
          .append(p.offset())
          .append(':')
          .append(p.size())
          .append(':')
          .append(p.incarnation());
    }
    return sb.toString();
  }

  static List<FatPointer> decode(String s) {
    List<FatPointer> out = new ArrayList<>();
    for (String one : s.split(",")) {
      String[] f = one.split(":");
      out.add(
          new FatPointer(
              Integer.parseInt(f[0]),
              Long.parseLong(f[1]),
              Integer.parseInt(f[2]),
              Long.parseLong(f[3])));
    }
    return out;
  }

  /** Ops as one word: r:key:version and w:key:version, comma-separated. */
  static String encodeOps(List<Op> ops) {
    StringBuilder sb = new StringBuilder();
    for (Op op : ops) {
      if (sb.length() > 0) {
        sb.append(',');
      }
      sb.append(op.kind() == TxHistory.Kind.READ ? 'r' : 'w')
          .append(':')
          .append(op.key())
          .append(':')
          .append(op.value());
    }
    return sb.toString();
  }

  static List<Op> decodeOps(String s) {
    List<Op> out = new ArrayList<>();
    for (String one : s.split(",")) {
      String[] f = one.split(":");
      long key = Long.parseLong(f[1]);
      long v = Long.parseLong(f[2]);
      switch (f[0]) {
        case "r" -> out.add(Op.read(key, v));
        case "w" -> out.add(Op.write(key, v));
        default ->
            throw new IllegalArgumentException("history op: " + one + " (expected r:k:v or w:k:v)");
      }
    }
    return out;
  }
}
