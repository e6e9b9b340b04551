package io.ferrite.bench.nodes;

import io.ferrite.bench.IoThreadCpu;
import io.ferrite.bench.fabric.Fabrics;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Where a File read's time goes: one File written once, then read through {@link
 * NodeReader#inputStream(int, int)} with an application {@code byte[]} of BUF bytes, alternating
 * between read-ahead shapes (PIECE KiB x DEPTH in flight) round after round, printing MiB/s and the
 * CPU per MiB of the caller, the client's tcp I/O threads and the servers' tcp I/O threads. For A/B
 * of the stream's read-ahead in one JVM; not a suite (no ceiling, no report).
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.nodes.FileReadProbe tcp 3 256 1048576 1024:4 256:8
 * </pre>
 *
 * Arguments: {@code FABRIC ROUNDS FILE_MIB BUF[,BUF...] SHAPE...}, a SHAPE being {@code
 * PIECE_KIB:DEPTH} (the stream's read-ahead) or {@code heap:SLICES} (no stream: positional reads
 * straight into slices of the application's array, see {@link #heapReads}).
 */
public final class FileReadProbe {
  private FileReadProbe() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 5) {
      System.err.println("usage: FileReadProbe FABRIC ROUNDS FILE_MIB BUF PIECE_KIB:DEPTH...");
      System.exit(2);
    }
    String fabric = args[0];
    int rounds = Integer.parseInt(args[1]);
    long fileBytes = Long.parseLong(args[2]) << 20;
    int[] bufs = java.util.Arrays.stream(args[3].split(",")).mapToInt(Integer::parseInt).toArray();
    List<int[]> shapes = new ArrayList<>();
    for (int i = 4; i < args.length; i++) {
      String[] pd = args[i].split(":");
      shapes.add(
          pd[0].equals("heap")
              ? new int[] {0, -Integer.parseInt(pd[1])}
              : new int[] {Integer.parseInt(pd[0]) << 10, Integer.parseInt(pd[1])});
    }
    Path shmRoot = Files.createTempDirectory(Path.of("/dev/shm"), "ffp-");
    Path dataDir = Files.createTempDirectory("ffp-data-");
    long perServer = Math.max(256L << 20, (fileBytes / 2 + (128L << 20)) & -(64L << 20));
    FerriteConfig cfg =
        io.ferrite.bench.BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "fp")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, shmRoot.toString())
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.CAPACITY_DRAM, Long.toString(perServer))
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    Credentials creds =
        new Credentials("probe", "probe-secret-0123456789abcdef".getBytes(StandardCharsets.UTF_8));
    List<AutoCloseable> running = new ArrayList<>();
    try (Fabric shm = Fabrics.create("shm");
        Fabric tcp = Fabrics.create("tcp")) {
      Master master = NodesBench.startCluster(cfg, creds, tcp, shm, "p", running);
      ClientOptions co =
          ClientOptions.builder(creds).fabric(fabric).fabrics(Fabrics::create).build();
      FerriteClient client = Ferrite.connect(master.addresses().get("tcp"), co);
      running.add(client);
      Nodes nodes = new Nodes(client);
      byte[] b = new byte[Math.max(java.util.Arrays.stream(bufs).max().getAsInt(), 1 << 20)];
      NodeWriter w = nodes.create("/probe");
      try (OutputStream out = w.outputStream()) {
        for (long done = 0; done < fileBytes; done += b.length) {
          out.write(b, 0, b.length);
        }
      }
      NodeReader r = nodes.open("/probe");
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      for (int round = 0; round <= rounds; round++) {
        for (int buf : bufs) {
          for (int[] shape : shapes) {
            Map<String, Long> before = IoThreadCpu.byGroup();
            long me0 = mx.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            long got = 0;
            if (shape[1] < 0) {
              got = heapReads(r, b, buf, -shape[1]);
            } else {
              try (InputStream in = r.inputStream(shape[0], shape[1])) {
                int n;
                while ((n = in.read(b, 0, buf)) > 0) {
                  got += n;
                }
              }
            }
            double sec = (System.nanoTime() - t0) / 1e9;
            if (got != fileBytes) {
              throw new IllegalStateException("read " + got + " of " + fileBytes);
            }
            Map<String, Long> after = IoThreadCpu.byGroup();
            after.put("caller", mx.getCurrentThreadCpuTime() - me0);
            double mib = got / (double) (1 << 20);
            StringBuilder sb = new StringBuilder();
            for (Map.Entry<String, Long> e : after.entrySet()) {
              long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
              sb.append(String.format(Locale.ROOT, " %s %.0fus/MiB", e.getKey(), d / 1e3 / mib));
            }
            System.out.printf(
                Locale.ROOT,
                "%s round %d shape %dKiB:%d buf %d: %.0f MiB/s |%s%n",
                fabric,
                round,
                shape[0] >> 10,
                shape[1],
                buf,
                mib / sec,
                sb);
          }
        }
      }
    } finally {
      for (int i = running.size() - 1; i >= 0; i--) {
        running.get(i).close();
      }
      for (Path dir : List.of(shmRoot, dataDir)) {
        FileTrees.delete(dir);
      }
    }
  }

  /**
   * No stream: each application read is {@code slices} positional reads straight into slices of the
   * caller's heap array, all in flight, awaited together (over tcp, Netty copies each socket read
   * of up to 16 KiB into the array while it is cache-hot; with 1 slice this is what the stream did
   * once it had latched).
   */
  private static long heapReads(NodeReader r, byte[] b, int buf, int slices) {
    long size = r.size();
    long got = 0;
    CompletableFuture<?>[] parts = new CompletableFuture<?>[slices];
    while (got < size) {
      int len = (int) Math.min(buf, size - got);
      int piece = (len + slices - 1) / slices;
      int k = 0;
      for (int at = 0; at < len; at += piece) {
        parts[k++] = r.read(got + at, ByteBuffer.wrap(b, at, Math.min(piece, len - at)));
      }
      CompletableFuture.allOf(java.util.Arrays.copyOf(parts, k)).join();
      got += len;
    }
    return got;
  }
}
