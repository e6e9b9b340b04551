package io.ferrite.fabric.tcp;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.shm.ShmFabric;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A rough probe, not a benchmark and never an assertion: single-thread 8-byte read latency over tcp
 * and shm beside a raw loopback socket ping-pong, and 1 MiB read bandwidth beside a raw loopback
 * stream. Run with {@code -Dferrite.probe=true}. The real measurements live in ferrite-bench.
 */
@EnabledIfSystemProperty(named = "ferrite.probe", matches = "true")
class FabricLatencyProbe {
  private static final int ROUNDS = 20_000;
  private final Credentials credentials =
      new Credentials("probe", "probe-secret-0123456789".getBytes(StandardCharsets.UTF_8));

  @Test
  void probe() throws Exception {
    double raw = rawPingPongP50();
    double rawBw = rawStreamGiBps();
    Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-probe-");
    RegionTable regions = new RegionTable();
    MappedRegion r = MappedRegion.create(dir.resolve("r"), 1, 64 << 20, 42);
    regions.register(r);
    try {
      for (Fabric f : new Fabric[] {new TcpFabric(), new ShmFabric()}) {
        try (f;
            FabricServer s =
                f.serve(ServerSpec.loopback(1, credentials, regions, RpcHandler.none(), dir));
            FabricConnection c = f.connect(s.address(), ConnectOptions.of(credentials))) {
          RegionRef ref = regions.ref(1, 1);
          double p50 = readP50(c, ref);
          double bw = readGiBps(c, ref, 1);
          double bwPipelined = readGiBps(c, ref, 8);
          System.out.printf(
              Locale.ROOT,
              "[probe] %s (leak detection %s): 8 B read p50 %.1f us (raw loopback ping-pong p50"
                  + " %.1f us, ratio %.2f); 1 MiB reads %.2f GiB/s sequential, %.2f GiB/s 8 in"
                  + " flight (raw loopback stream %.2f GiB/s, ratio %.2f)%n",
              f.name(),
              io.netty.util.ResourceLeakDetector.getLevel(),
              p50,
              raw,
              p50 / raw,
              bw,
              bwPipelined,
              rawBw,
              bwPipelined / rawBw);
        }
      }
    } finally {
      r.closeAndDelete();
      Files.deleteIfExists(dir);
    }
  }

  private static double readP50(FabricConnection c, RegionRef ref) {
    ByteBuffer dst = ByteBuffer.allocateDirect(8);
    long[] t = new long[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
      c.readSync(ref, 64, dst);
    }
    for (int i = 0; i < ROUNDS; i++) {
      long t0 = System.nanoTime();
      c.readSync(ref, 64, dst);
      t[i] = System.nanoTime() - t0;
    }
    Arrays.sort(t);
    return t[ROUNDS / 2] / 1000.0;
  }

  private static double readGiBps(FabricConnection c, RegionRef ref, int inFlight) {
    int size = 1 << 20;
    ByteBuffer[] dsts = new ByteBuffer[inFlight];
    for (int i = 0; i < inFlight; i++) {
      dsts[i] = ByteBuffer.allocateDirect(size);
    }
    int n = 2000;
    double best = 0;
    for (int round = 0; round < 5; round++) {
      long t0 = System.nanoTime();
      ArrayDeque<CompletableFuture<Void>> q = new ArrayDeque<>();
      for (int i = 0; i < n; i++) {
        if (q.size() == inFlight) {
          Futures.join(q.poll());
        }
        q.add(c.read(ref, (long) (i % 60) * size, dsts[i % inFlight]));
      }
      while (!q.isEmpty()) {
        Futures.join(q.poll());
      }
      // Best of five: the first rounds warm the JIT up; the machine is shared.
      best = Math.max(best, (double) n * size / (System.nanoTime() - t0) * 1e9 / (1 << 30));
    }
    return best;
  }

  private static double rawPingPongP50() throws Exception {
    try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread echo =
          new Thread(
              () -> {
                try (Socket s = ss.accept()) {
                  s.setTcpNoDelay(true);
                  InputStream in = s.getInputStream();
                  OutputStream out = s.getOutputStream();
                  byte[] b = new byte[8];
                  DataInputStream din = new DataInputStream(in);
                  while (true) {
                    din.readFully(b);
                    out.write(b);
                  }
                } catch (IOException e) {
                  // client closed
                }
              },
              "raw-echo");
      echo.start();
      try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort())) {
        s.setTcpNoDelay(true);
        DataInputStream in = new DataInputStream(s.getInputStream());
        OutputStream out = s.getOutputStream();
        byte[] b = new byte[8];
        long[] t = new long[ROUNDS];
        for (int i = 0; i < 2 * ROUNDS; i++) {
          long t0 = System.nanoTime();
          out.write(b);
          in.readFully(b);
          if (i >= ROUNDS) {
            t[i - ROUNDS] = System.nanoTime() - t0;
          }
        }
        Arrays.sort(t);
        return t[ROUNDS / 2] / 1000.0;
      } finally {
        echo.join(2000);
      }
    }
  }

  private static double rawStreamGiBps() throws Exception {
    long total = 2L << 30;
    try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread sender =
          new Thread(
              () -> {
                try (Socket s = ss.accept()) {
                  OutputStream out = s.getOutputStream();
                  byte[] chunk = new byte[1 << 20];
                  for (long sent = 0; sent < total; sent += chunk.length) {
                    out.write(chunk);
                  }
                } catch (IOException e) {
                  // client closed
                }
              },
              "raw-sender");
      sender.start();
      try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort())) {
        InputStream in = s.getInputStream();
        byte[] buf = new byte[1 << 20];
        long got = 0;
        long t0 = System.nanoTime();
        int n;
        while ((n = in.read(buf)) > 0) {
          got += n;
        }
        return (double) got / (System.nanoTime() - t0) * 1e9 / (1 << 30);
      } finally {
        sender.join(2000);
      }
    }
  }
}
