package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.proto.BlockRef;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The check {@code ferrite local} runs after start: through each fabric, allocate a block on every
 * memory server, write random bytes, read them back, and run a compare-and-swap and a
 * fetch-and-add; print one line per server and fabric.
 */
final class SelfCheck {
  private static final int BYTES = 4096;

  private SelfCheck() {}

  /** Returns true if every check passed. */
  static boolean run(
      PrintWriter out,
      String uri,
      Credentials credentials,
      FabricFactory fabrics,
      List<String> clientFabrics,
      List<Integer> serverIds) {
    boolean ok = true;
    SecureRandom rnd = new SecureRandom();
    for (String fabric : clientFabrics) {
      try (FerriteClient c =
          Ferrite.connect(
              uri,
              ClientOptions.builder(credentials)
                  .fabric(fabric)
                  .fabrics(fabrics)
                  .clientName("self-check-" + fabric)
                  .build())) {
        Map<Integer, BlockRef> perServer = new LinkedHashMap<>();
        List<BlockRef> all = new ArrayList<>();
        for (int round = 0; round < 4 && perServer.size() < serverIds.size(); round++) {
          for (BlockRef b : c.allocate(serverIds.size())) {
            all.add(b);
            perServer.putIfAbsent(b.serverId(), b);
          }
        }
        for (int id : serverIds) {
          BlockRef b = perServer.get(id);
          if (b == null) {
            out.printf(
                Locale.ROOT, "  FAIL server %d via %s: no block was allocated on it%n", id, fabric);
            ok = false;
            continue;
          }
          ok &= checkOne(out, c, b, fabric, rnd);
        }
        c.free(all);
      } catch (FerriteException | IllegalArgumentException e) {
        out.printf(Locale.ROOT, "  FAIL via %s: %s%n", fabric, e.getMessage());
        ok = false;
      }
      out.flush();
    }
    return ok;
  }

  private static boolean checkOne(
      PrintWriter out, FerriteClient c, BlockRef b, String fabric, SecureRandom rnd) {
    long t0 = System.nanoTime();
    try {
      byte[] data = new byte[BYTES];
      rnd.nextBytes(data);
      c.writeSync(b, 0, ByteBuffer.wrap(data));
      ByteBuffer back = ByteBuffer.allocate(BYTES);
      c.readSync(b, 0, back);
      boolean same = Arrays.equals(data, back.array());
      long word = BYTES;
      long before = c.fetchAndAddSync(b, word, 0);
      long cas = c.compareAndSwapSync(b, word, before, before + 1);
      long faa = c.fetchAndAddSync(b, word, 5);
      long after = c.fetchAndAddSync(b, word, 0);
      boolean atomics = cas == before && faa == before + 1 && after == before + 6;
      double ms = (System.nanoTime() - t0) / 1e6;
      out.printf(
          Locale.ROOT,
          "  %s server %d via %-3s: write+read %d B %s, cas+faa %s (%s, %.2f ms)%n",
          same && atomics ? "ok  " : "FAIL",
          b.serverId(),
          fabric,
          BYTES,
          same ? "match" : "MISMATCH",
          atomics ? "ok" : "WRONG",
          b,
          ms);
      return same && atomics;
    } catch (FerriteException e) {
      out.printf(
          Locale.ROOT, "  FAIL server %d via %s: %s%n", b.serverId(), fabric, e.getMessage());
      return false;
    }
  }
}
