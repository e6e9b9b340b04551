package io.ferrite.tx.tao;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** TaoWorkload: a load builds the graph it says, a run over shm counts what it ran, no errors. */
@ExtendWith(SeedExtension.class)
class TaoWorkloadTest {
  @TempDir Path dir;
  @AutoClose TaoCluster cluster;

  @Test
  void loadThenRunTheMix(TestSeed seed) throws Exception {
    cluster = new TaoCluster(dir, 2, true);
    Tao tao = new Tao(new TxClient(cluster.client()), 200, 40, TaoTest.CHUNK);
    List<long[]> progress = new ArrayList<>();
    TaoWorkload w =
        TaoWorkload.load(
            tao, 200, 5, seed.value(), (done, total) -> progress.add(new long[] {done, total}));
    assertEquals(200, w.ids().size());
    long[] last = progress.get(progress.size() - 1);
    assertEquals(1200, last[0]);
    assertEquals(1200, last[1]);
    long assocs = 0;
    long most = 0;
    for (FatPointer id : w.ids()) {
      long n = 0;
      for (int atype = 0; atype < 3; atype++) {
        n += tao.assocCount(id, atype);
      }
      assocs += n;
      most = Math.max(most, n);
    }
    assertEquals(1000, assocs);
    assertTrue(most > 5 * 5, "skewed degrees: the largest is " + most + ", the mean 5");
    // Another client attaches to the loaded ids, as a separate `--run` would.
    Tao other = new Tao(new TxClient(cluster.client()), 200, 40, TaoTest.CHUNK);
    TaoWorkload.Result r =
        TaoWorkload.attach(other, w.ids()).run(2, Duration.ofMillis(300), seed.value());
    assertNull(r.firstError(), r::toString);
    assertEquals(0, r.errors());
    assertTrue(r.ops() > 0, r::toString);
    assertEquals(r.ops(), r.reads() + r.writes());
    assertTrue(r.p50Micros() > 0 && r.p50Micros() <= r.p99Micros(), r::toString);
    assertThrows(IllegalArgumentException.class, () -> TaoWorkload.attach(other, List.of()));
    assertThrows(IllegalArgumentException.class, () -> w.run(0, Duration.ofMillis(1), 1));
  }

  @Test
  void zipfIsSkewedAndInRange(TestSeed seed) {
    TaoWorkload.Zipf z = new TaoWorkload.Zipf(1000, TaoWorkload.ZIPF_THETA);
    Random random = new Random(seed.value());
    int[] hits = new int[1000];
    for (int i = 0; i < 100_000; i++) {
      hits[z.next(random)]++;
    }
    // theta 0.99 over 1000: the first rank takes about 1/H(1000) = 13 %, the last about 0.013 %.
    assertTrue(hits[0] > 10_000 && hits[0] < 16_000, "first " + hits[0]);
    assertTrue(hits[999] < 100, "last " + hits[999]);
  }
}
