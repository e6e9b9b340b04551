package io.ferrite.bench.memory;

import io.ferrite.bench.IoThreadCpu;
import io.ferrite.bench.Progress;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where a whole 64 MiB read's time goes: the cluster of {@code bench memory} (2 servers, 1 MiB
 * chunks), one 64 MiB mapping, whole reads of it into one 64 MiB direct buffer for SECONDS per
 * round, printing MiB/s and the CPU per MiB of the caller, the client's tcp I/O threads and the
 * servers' tcp I/O threads. Not a suite (no ceiling, no report).
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.memory.ReadProbe tcp 3 2
 * </pre>
 *
 * Arguments: {@code FABRIC ROUNDS SECONDS}.
 */
public final class ReadProbe {
  private ReadProbe() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: ReadProbe FABRIC ROUNDS SECONDS");
      System.exit(2);
    }
    String fabric = args[0];
    int rounds = Integer.parseInt(args[1]);
    long nanos = Long.parseLong(args[2]) * 1_000_000_000L;
    MemoryBench.Options o =
        MemoryBench.Options.quick().withFabrics(List.of(fabric)).withProgress(null);
    try (MemoryBench.Cluster cluster =
        MemoryBench.Cluster.start(o, new Progress("probe", System.err))) {
      RStore store = new RStore(cluster.client(fabric));
      Namespace ns = store.createNamespace("probe");
      ns.reserve(MemoryBench.DATA_BYTES);
      RAddress ra = ns.alloc(MemoryBench.DATA_BYTES, 0);
      Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER);
      ByteBuffer whole = ByteBuffer.allocateDirect(MemoryBench.DATA_BYTES);
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      for (int round = 0; round <= rounds; round++) {
        Map<String, Long> before = IoThreadCpu.byGroup();
        long me0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        long bytes = 0;
        do {
          m.readSync(0, whole);
          bytes += MemoryBench.DATA_BYTES;
        } while (System.nanoTime() - t0 < nanos);
        double sec = (System.nanoTime() - t0) / 1e9;
        Map<String, Long> after = IoThreadCpu.byGroup();
        after.put("caller", mx.getCurrentThreadCpuTime() - me0);
        double mib = bytes / (double) (1 << 20);
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, Long> e : after.entrySet()) {
          long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
          sb.append(String.format(Locale.ROOT, " %s %.0fus/MiB", e.getKey(), d / 1e3 / mib));
        }
        System.out.printf(
            Locale.ROOT, "%s round %d: %.0f MiB/s |%s%n", fabric, round, mib / sec, sb);
      }
      m.unmap();
    }
  }
}
