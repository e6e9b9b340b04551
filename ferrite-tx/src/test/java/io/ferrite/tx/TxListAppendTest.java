package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.local.LocalFaults;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.testing.SerializabilityChecker;
import io.ferrite.kernel.testing.TxHistory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An Elle-style list-append workload (Kingsbury and Alvaro, VLDB 2020) over the tx face: objects on
 * two servers each hold a small encoded list of longs; a transaction picks three of them and, for
 * each, reads its list, or reads it and rewrites it with one more element (unique in the whole
 * run). The history is in {@link SerializabilityChecker}'s list form, which infers each key's
 * version order from the lists read: elements are unique by construction, so an aborted or UNKNOWN
 * append never collides with a committed one (unlike FaRM's version + 1, see TxBankTest).
 */
@ExtendWith(SeedExtension.class)
class TxListAppendTest {
  static final int LISTS = 6;

  /** Payload bytes of a list object: a count, then up to 120 elements (TxCluster's max is 1000). */
  static final int SIZE = 8 + 8 * 120;

  @TempDir Path dir;
  @AutoClose TxCluster cluster;

  @ParameterizedTest(name = "{0}, replicas {1}")
  @MethodSource("io.ferrite.tx.TxBankTest#runs")
  void appendsAreStrictlySerializable(TxBankTest.Mode mode, int replicas, TestSeed seed)
      throws Exception {
    boolean real = mode == TxBankTest.Mode.SHM;
    cluster = new TxCluster(dir, 2, real, replicas);
    TxClient a = new TxClient(cluster.client());
    TxClient b = new TxClient(cluster.client());
    List<FatPointer> lists = new ArrayList<>();
    for (int i = 0; i < LISTS; i++) {
      // A zeroed object: count 0, the empty list.
      lists.add(TxCommitTest.make(i % 2 == 0 ? a : b, new byte[SIZE]));
    }
    TxHistory history = new TxHistory(); // versions are inferred from the lists: no initial ones
    List<TxClient> clients = cluster.clientsViewing(3, lists);
    LocalFaults faults = cluster.faults(real);
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong elements = new AtomicLong();
    AtomicLong commits = new AtomicLong();
    CountDownLatch workersDone = new CountDownLatch(3);
    try (TestThreads bg = new TestThreads(() -> done.set(true))) {
      for (int w = 0; w < 3; w++) {
        Random random = new Random(seed.value() + w);
        TxClient c = clients.get(w);
        int client = w;
        bg.start(
            "appends-" + w,
            () -> {
              try {
                for (int i = 0; i < 80 && !done.get(); i++) {
                  if (one(c, client, random, lists, history, elements)) {
                    commits.incrementAndGet();
                  }
                }
              } finally {
                workersDone.countDown();
              }
            });
      }
      if (mode == TxBankTest.Mode.FAULTS) {
        Random random = new Random(seed.value() - 1);
        bg.start("faults", () -> TxBankTest.injectFaults(faults, random, workersDone, done));
      }
    }
    faults.heal();
    SerializabilityChecker.Result r = SerializabilityChecker.assertStrictlySerializable(history);
    System.out.println("TxListAppendTest " + mode + ", replicas " + replicas + ": " + r.summary());
    assertTrue(commits.get() > 0, "no transaction committed");
  }

  /** One transaction over three distinct lists; whether it committed. */
  private static boolean one(
      TxClient c,
      int client,
      Random random,
      List<FatPointer> lists,
      TxHistory history,
      AtomicLong elements) {
    TxHistory.Tx h = history.begin(client);
    Transaction t = c.txBegin();
    int first = random.nextInt(LISTS);
    try {
      for (int k = 0; k < 3; k++) {
        FatPointer p = lists.get((first + k) % LISTS);
        long key = history.key(p);
        long[] list = decode(t.txRead(p));
        h.readList(key, list);
        if (random.nextBoolean() && list.length < (SIZE - 8) / 8) {
          long e = elements.incrementAndGet();
          long[] longer = Arrays.copyOf(list, list.length + 1);
          longer[list.length] = e;
          t.txWrite(p, encode(longer));
          h.append(key, e);
        }
      }
    } catch (FerriteException e) {
      h.abort(); // a read failed: nothing was sent for commit
      return false;
    }
    TxResult r;
    try {
      r = t.txCommit();
    } catch (FerriteException e) {
      h.unknown(); // a lost COMMIT answer or a silent decider
      return false;
    }
    if (r.committed()) {
      h.commit();
      return true;
    }
    h.abort();
    return false;
  }

  static byte[] encode(long[] list) {
    ByteBuffer b = ByteBuffer.allocate(8 + 8 * list.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(list.length);
    for (long e : list) {
      b.putLong(e);
    }
    return b.array();
  }

  static long[] decode(byte[] payload) {
    ByteBuffer b = ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN);
    long[] list = new long[(int) b.getLong()];
    for (int i = 0; i < list.length; i++) {
      list[i] = b.getLong();
    }
    return list;
  }
}
