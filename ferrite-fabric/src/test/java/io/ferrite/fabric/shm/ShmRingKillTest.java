package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A client process killed (SIGKILL) in the middle of its calls: some waiting in the request ring,
 * some inline, some on service threads, some answered later, maybe one record claimed and not yet
 * committed. The server drops the connection and its rings, drops the answers still to come, and
 * serves the next client.
 */
@Tag("multiprocess")
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingKillTest extends RingTestSupport {

  @Test
  @Timeout(180)
  void aClientKilledMidCallLeavesNothingBehind(Random random) throws Exception {
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 64);
    long mappings = ringMappings();
    List<Process> children = new ArrayList<>();
    try {
      for (int round = 0; round < 3; round++) {
        Process p = child();
        children.add(p);
        BufferedReader out =
            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        StringBuilder log = new StringBuilder();
        while ((line = out.readLine()) != null && !line.equals("READY")) {
          log.append(line).append('\n');
        }
        assertEquals("READY", line, "the client process did not start:\n" + log);
        Thread.sleep(random.nextInt(200));
        p.destroyForcibly();
        p.waitFor();
        await("the server dropped the killed client", () -> server.connections() == 0);
        await("and its rings", () -> ringServer().connections() == 0);
        assertEquals(0, ringFiles(), "ring file left behind");
        ShmConnection next = connect();
        assertEcho(next, ECHO_INLINE, ByteBuffer.wrap(new byte[] {(byte) round}), "next client");
        next.close();
        closeLater.remove(next);
        await("the next client's rings go too", () -> ringServer().connections() == 0);
      }
      release.countDown(); // blocked calls of the dead clients finish; their answers are dropped
      await(
          "no ring of a dead client stays mapped",
          () -> {
            try {
              return ringMappings() == mappings;
            } catch (java.io.IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          });
      assertTrue(server.connections() == 0);
    } finally {
      for (Process p : children) {
        p.destroyForcibly();
        p.waitFor();
      }
    }
  }

  private Process child() throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx128m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(RingChild.class.getName());
    cmd.add(server.address());
    cmd.add(credentials.clusterId());
    cmd.add(HexFormat.of().formatHex(credentials.secret()));
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }
}
