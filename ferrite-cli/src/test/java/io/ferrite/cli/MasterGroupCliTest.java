package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.local.InProcessCluster;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** A master group from the command line: ferrite local --masters 3, ferrite status's roles. */
class MasterGroupCliTest extends LocalCliCapture {

  /** A base port p with p..p+2 and p+100..p+102 free now. */
  static int freeBase() throws IOException {
    Random r = new Random();
    for (int attempt = 0; attempt < 100; attempt++) {
      int p = 20_000 + r.nextInt(20_000);
      List<ServerSocket> held = new ArrayList<>();
      try {
        for (int i = 0; i < 3; i++) {
          held.add(new ServerSocket(p + i, 50, InetAddress.getLoopbackAddress()));
          held.add(new ServerSocket(p + 100 + i, 50, InetAddress.getLoopbackAddress()));
        }
        return p;
      } catch (IOException taken) {
        // another
      } finally {
        for (ServerSocket s : held) {
          s.close();
        }
      }
    }
    throw new IOException("no free ports for a master group");
  }

  @Test
  void localWithThreeMastersPassesItsSelfCheck() throws IOException {
    int base = freeBase();
    int code =
        run(
            "local",
            "--masters",
            "3",
            "--exit-after-check",
            "--port",
            Integer.toString(base),
            "--dir",
            dir.resolve("local").toString(),
            "--default-cluster-file",
            dir.resolve("home/cluster").toString(),
            "--cluster-id",
            "g" + ProcessHandle.current().pid(),
            "--dram",
            "64m",
            "--disk",
            "0",
            "--set",
            "shm.dir=" + shm);
    assertEquals(0, code, out + "\n" + err);
    String text = out.toString();
    assertTrue(text.contains("self-check passed"), text);
    assertEquals(1, text.split("  leader, term ", -1).length - 1, text);
    assertTrue(text.contains("  follower, term "), text);
    assertTrue(
        text.contains(
            "uri      ferrite://127.0.0.1:"
                + base
                + ",127.0.0.1:"
                + (base + 1)
                + ",127.0.0.1:"
                + (base + 2)),
        text);
  }

  @Test
  void statusShowsEachMastersRoleAndTerm() throws IOException {
    int base = freeBase();
    String id = "gs" + ProcessHandle.current().pid();
    FerriteConfig cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, id)
            .set(FerriteConfig.DATA_DIR, dir.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.MASTER_PORT, Integer.toString(base))
            .set(FerriteConfig.REGION_SIZE, "16m")
            .set(FerriteConfig.CAPACITY_DRAM, "16m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    java.nio.file.Path secret = dir.resolve("secret");
    Credentials creds = new Credentials(id, Secrets.readOrCreate(secret));
    try (InProcessCluster c =
        InProcessCluster.builder(cfg, creds)
            .fabrics(io.ferrite.kernel.config.FabricFactory.standard(cfg), List.of("tcp"))
            .servers(1)
            .masters(3)
            .start()) {
      c.master(); // a leader is serving
      int code =
          run(
              "status",
              "--cluster",
              c.uri(),
              "--secret-file",
              secret.toString(),
              "--cluster-id",
              id);
      assertEquals(0, code, out + "\n" + err);
      String text = out.toString();
      assertTrue(text.contains("masters:"), text);
      int leaders = 0;
      int followers = 0;
      for (String line : text.split("\n")) {
        if (line.startsWith("  tcp://127.0.0.1:")) {
          leaders += line.contains(" leader ") ? 1 : 0;
          followers += line.contains(" follower ") ? 1 : 0;
          assertTrue(line.matches(".* term [1-9][0-9]*"), line);
        }
      }
      assertEquals(1, leaders, text);
      assertEquals(2, followers, text);
    }
  }
}
