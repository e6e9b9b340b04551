package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue #20's case, with separate JVMs: {@code ferrite fs put - /f} fed slowly through a pipe (this
 * test writes its stdin) while the master is SIGKILLed and started again 3 s later. The put rides
 * through (its calls to the master wait, {@code client.master.deadline}, and carry request ids) and
 * completes; {@code ferrite fs cat /f} then writes exactly the bytes that went in. Every process is
 * killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class FsRideThroughMultiProcessTest extends ProcessClusterTest {
  static final String CLUSTER = "fs-ride-test";

  /** The master fsyncs its journal (1 MiB blocks: the put maps new ones after the restart). */
  static final String[] MASTER_SETS = {"journal.fsync=true", "server.dead.timeout=30s"};

  private String[] client(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(
        List.of(
            "--cluster",
            "ferrite://127.0.0.1:" + port,
            "--secret-file",
            secret().toString(),
            "--cluster-id",
            CLUSTER));
    return all.toArray(new String[0]);
  }

  /** {@code ferrite args...} in its own JVM: stdin a pipe, stdout to {@code out}, stderr logged. */
  private Process run(String name, Path out, String... args) throws IOException {
    Process p =
        new ProcessBuilder(CliProcesses.command(client(args)))
            .redirectOutput(out.toFile())
            .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve(name + ".log").toFile()))
            .start();
    processes.add(p);
    return p;
  }

  @Test
  void anFsPutFedByAPipeRidesThroughAMasterRestart(Random random) throws Exception {
    newCluster(CLUSTER, "ferrite-fs-ride-");
    Process master = startMaster("master", MASTER_SETS);
    startServer("s1", "64m", "0");
    await("an ALIVE server", () -> CliProcesses.oneServerAlive(port, credentials));

    // ~4 MiB in 16 KiB writes, 20 ms apart: the put is mid-file for the whole outage, and needs
    // blocks and its close (PUBLISH) from the restarted master.
    byte[] data = new byte[(4 << 20) + random.nextInt(1 << 16)];
    random.nextBytes(data);
    Process put = run("put", dir.resolve("put.out"), "fs", "put", "-", "/f");
    AtomicLong fed = new AtomicLong();
    AtomicReference<Throwable> feedFailed = new AtomicReference<>();
    Thread feeder =
        new Thread(
            () -> {
              try (OutputStream in = put.getOutputStream()) {
                for (int off = 0; off < data.length; off += 16 << 10) {
                  int n = Math.min(16 << 10, data.length - off);
                  in.write(data, off, n);
                  in.flush();
                  fed.addAndGet(n);
                  Thread.sleep(20);
                }
              } catch (Throwable t) {
                feedFailed.set(t);
              }
            },
            "fs-put-feeder");
    feeder.start();
    try {
      await("1 MiB fed to fs put", () -> fed.get() >= 1 << 20 || feedFailed.get() != null);
      master.destroyForcibly().waitFor(); // SIGKILL, mid-put
      long atKill = fed.get();
      Thread.sleep(3000);
      startMaster("master", MASTER_SETS);
      feeder.join(TimeUnit.SECONDS.toMillis(60));
      assertTrue(!feeder.isAlive(), "the feeder is stuck\n" + logs());
      assertTrue(feedFailed.get() == null, "feeding fs put failed: " + feedFailed.get() + logs());
      assertTrue(atKill < data.length, "the kill came after the last byte was fed");
      assertTrue(put.waitFor(60, TimeUnit.SECONDS), "fs put did not finish\n" + logs());
      assertEquals(0, put.exitValue(), "fs put failed\n" + logs());
    } finally {
      feeder.interrupt();
      feeder.join();
    }

    Path back = dir.resolve("cat.out");
    Process cat = run("cat", back, "fs", "cat", "/f");
    assertTrue(cat.waitFor(60, TimeUnit.SECONDS), "fs cat did not finish\n" + logs());
    assertEquals(0, cat.exitValue(), "fs cat failed\n" + logs());
    byte[] got = Files.readAllBytes(back);
    assertEquals(data.length, got.length, "fs cat's length\n" + logs());
    assertArrayEquals(data, got, "fs cat's bytes");
  }
}
