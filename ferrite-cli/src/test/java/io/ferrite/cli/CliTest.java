package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The commands in this JVM: help texts, the local cluster's self-check, error reporting. */
class CliTest extends LocalCliCapture {

  @Test
  void everyCommandHasHelpWithExamples() {
    for (String c : new String[] {"local", "master", "server", "status"}) {
      out.getBuffer().setLength(0);
      assertEquals(0, run(c, "--help"), c);
      assertTrue(out.toString().contains("Examples:"), c + ": " + out);
    }
    assertEquals(0, run("--version"));
  }

  @Test
  void localRunsItsSelfCheckAndExits() {
    int code =
        run(
            "local",
            "--fabrics",
            "local",
            "--exit-after-check",
            "--dir",
            dir.toString(),
            "--cluster-id",
            "cli-test-" + ProcessHandle.current().pid(),
            "--dram",
            "128m",
            // A capacity key set explicitly wins over the machine's sizing, as --dram does.
            "--set",
            "capacity.disk=64m",
            "--set",
            "shm.dir=" + shm);
    assertEquals(0, code, out + "\n" + err);
    assertTrue(out.toString().contains("self-check passed"), out.toString());
    assertTrue(out.toString().contains("dram  256 MiB in total"), out.toString());
    assertTrue(
        out.toString().contains("sizing   dram 128 MiB per server: given; disk 64 MiB: given"),
        out.toString());
    assertTrue(Files.exists(dir.resolve("cluster")));
    assertTrue(Files.exists(dir.resolve("secret")));
    // The CLIENT secret beside the root, for applications (docs/SECURITY.md).
    assertEquals(
        io.ferrite.fabric.Role.CLIENT,
        io.ferrite.kernel.config.Secrets.load("x", dir.resolve("client.secret")).role());
  }

  @Test
  void localOverTcpAndShmChecksBothAndStatusFindsIt() {
    Path published = dir.resolve("home/.ferrite/cluster");
    int code =
        run(
            "local",
            "--exit-after-check",
            "--port",
            "0",
            "--dir",
            dir.resolve("local").toString(),
            "--default-cluster-file",
            published.toString(),
            "--cluster-id",
            "t" + ProcessHandle.current().pid(),
            "--dram",
            "128m",
            "--disk",
            "64m",
            "--set",
            "shm.dir=" + shm);
    assertEquals(0, code, out + "\n" + err);
    String text = out.toString();
    assertTrue(text.contains("via shm") && text.contains("via tcp"), text);
    assertTrue(text.contains("self-check passed"), text);
    assertTrue(Files.exists(published));
  }

  @Test
  void localWithTwoGroupsChecksAndStatusListsBoth() {
    Path file = dir.resolve("groups/.ferrite/cluster");
    String[] target = {
      "--cluster-file", dir.resolve("groups-local/cluster").toString(),
    };
    int code =
        run(
            "local",
            "--exit-after-check",
            "--groups",
            "2",
            "--port",
            "0",
            "--dir",
            dir.resolve("groups-local").toString(),
            "--default-cluster-file",
            file.toString(),
            "--cluster-id",
            "g" + ProcessHandle.current().pid(),
            "--dram",
            "128m",
            "--disk",
            "0",
            "--set",
            "shm.dir=" + shm);
    assertEquals(0, code, out + "\n" + err);
    String text = out.toString();
    assertTrue(text.contains("  group 1  ["), text);
    assertTrue(text.contains("self-check passed"), text);
    // The cluster file names both groups.
    assertTrue(
        io.ferrite.kernel.config.ClusterFile.read(dir.resolve("groups-local/cluster"))
            .uri()
            .contains(";"),
        text);
  }

  @Test
  void statusWithoutAClusterSaysWhatToDo() {
    int code =
        run("status", "--cluster-file", dir.resolve("nothing-here").toString(), "--cluster", "");
    assertEquals(1, code);
    assertTrue(err.toString().contains("no cluster given"), err.toString());
  }

  @Test
  void badConfigurationKeyIsReported() {
    int code = run("master", "--dir", dir.toString(), "--set", "master.prot=1");
    assertEquals(1, code);
    assertTrue(err.toString().contains("unknown configuration key 'master.prot'"), err.toString());
  }
}
