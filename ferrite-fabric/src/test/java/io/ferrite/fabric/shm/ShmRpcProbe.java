package io.ferrite.fabric.shm;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "FERRITE_PROBE", matches = "true")
class ShmRpcProbe extends RingTestSupport {
  @Test
  void probe() throws Exception {
    start(new ShmFabric.Rings(true, 256 << 10, 1 << 20), 2, 1024);
    ShmConnection c = connect();
    for (int op : new int[] {ECHO_INLINE, ECHO, ECHO_INLINE, ECHO}) {
      long[] t = new long[20000];
      long rang0 = c.rings().rang.sum();
      long heard0 = c.rings().heard.sum();
      for (int i = 0; i < t.length; i++) {
        long s = System.nanoTime();
        call(c, op, ByteBuffer.allocate(0));
        t[i] = System.nanoTime() - s;
      }
      Arrays.sort(t);
      System.out.printf("%n");
      System.out.printf(
          "op %d p50 %d p90 %d rang %d heard %d%n",
          op,
          t[t.length / 2],
          t[t.length * 9 / 10],
          c.rings().rang.sum() - rang0,
          c.rings().heard.sum() - heard0);
    }
  }
}
