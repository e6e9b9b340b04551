package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code ferrite fs} against a master (nodes extension found by ServiceLoader) and one memory
 * server in this JVM over tcp.
 */
class FsCommandTest {
  @TempDir Path dir;
  Path shm;
  Path clusterFile;
  final List<AutoCloseable> running = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    shm = Files.createTempDirectory(Path.of("/dev/shm"), "fsc");
    FerriteConfig cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "fs" + ProcessHandle.current().pid())
            .set(FerriteConfig.DATA_DIR, dir.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.CAPACITY_DRAM, "64m")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    Path secret = dir.resolve("secret");
    Credentials creds = new Credentials(cfg.clusterId(), Secrets.readOrCreate(secret));
    Fabric tcp = FabricFactory.standard().open("tcp");
    running.add(tcp);
    Master master = Master.start(cfg, creds, List.of(tcp));
    running.add(master);
    String address = master.addresses().get("tcp");
    running.add(
        MemoryServer.start(
            cfg.with(FerriteConfig.SERVER_NAME, "s1"), creds, List.of(tcp), address, List.of()));
    clusterFile = dir.resolve("cluster");
    new ClusterFile(address, cfg.clusterId(), secret).write(clusterFile);
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = running.size() - 1; i >= 0; i--) {
      running.get(i).close();
    }
    FileTrees.delete(shm);
  }

  StringWriter out;
  StringWriter err;

  int fs(String... args) {
    out = new StringWriter();
    err = new StringWriter();
    String[] all = new String[args.length + 3];
    all[0] = "fs";
    System.arraycopy(args, 0, all, 1, args.length);
    all[args.length + 1] = "--cluster-file";
    all[args.length + 2] = clusterFile.toString();
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(all);
  }

  /**
   * A put larger than the cluster fails with the nodes error as the user should read it: no {@code
   * java.io.IOException: io.ferrite.nodes.NodesException:} in front, and what to do.
   */
  @Test
  void noSpaceReachesTheUserWithoutWrappersAndWithWhatToDo() throws IOException {
    Path big = dir.resolve("big.bin");
    try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(big.toFile(), "rw")) {
      f.setLength(80L << 20); // sparse: more than the 64 MiB of dram the one server has
    }
    assertEquals(1, fs("put", big.toString(), "/big.bin"));
    String e = err.toString();
    assertTrue(e.startsWith("error: NO_SPACE: "), e);
    assertTrue(e.contains("'ferrite status' shows capacity"), e);
    assertTrue(!e.contains("Exception"), e);
  }

  /** Like a shell tool: a PATH operand that fails is reported, and the ones after it are done. */
  @Test
  void everyPathOperandIsDoneAfterOneFails() {
    assertEquals(1, fs("mkdir", "/a", "/nope/b", "/c"));
    assertTrue(err.toString().startsWith("ferrite fs mkdir: /nope/b: "), err.toString());
    assertEquals(1, fs("stat", "/nope", "/c"));
    assertTrue(out.toString().contains("  Path: /c"), out.toString());
    assertEquals("ferrite fs stat: /nope: NOT_FOUND: no such node /nope\n", err.toString());
    assertEquals(0, fs("rm", "-f", "/missing", "/a"));
    assertEquals(1, fs("rm", "/missing", "/c"));
    assertEquals(0, fs("ls", "/"));
    assertEquals("", out.toString(), "/a and /c removed");
  }

  @Test
  void aShellUsersSession() throws IOException {
    byte[] data = new byte[6 << 20];
    new Random(3).nextBytes(data);
    Path local = dir.resolve("big.bin");
    Files.write(local, data);
    Files.writeString(dir.resolve("small.txt"), "hello\n");

    assertEquals(0, fs("mkdir", "-p", "/data/in"), err.toString());
    assertEquals(0, fs("put", local.toString(), "/data/in/"), err.toString());
    assertEquals(0, fs("put", dir.resolve("small.txt").toString(), "/data/in/s.txt"));
    assertEquals(0, fs("ls", "/data/in"));
    assertEquals("big.bin\ns.txt\n", out.toString());
    assertEquals(0, fs("ls", "-l", "/data/in"));
    assertTrue(
        out.toString().matches("(?s)-\\s+6291456 .* big.bin\n-\\s+6 .* s.txt\n"), out.toString());
    assertEquals(0, fs("ls", "-R", "/"));
    assertEquals("/:\ndata\n\n/data:\nin\n\n/data/in:\nbig.bin\ns.txt\n", out.toString());
    assertEquals(0, fs("get", "/data/in/big.bin", dir.resolve("back.bin").toString()));
    assertArrayEquals(data, Files.readAllBytes(dir.resolve("back.bin")));
    assertEquals(0, fs("stat", "/data/in/big.bin"));
    assertTrue(
        out.toString().contains("Type: file") && out.toString().contains("Size: 6291456 B"),
        out.toString());

    assertEquals(1, fs("rm", "/data"));
    assertEquals(
        "ferrite fs rm: /data: NOT_EMPTY: /data is a directory with 1 children\n", err.toString());
    assertEquals(1, fs("mv", "/data", "/data/in/x"));
    assertTrue(err.toString().contains("INVALID_MOVE"), err.toString());
    assertEquals(1, fs("ls", "/nope"));
    assertEquals("ferrite fs ls: /nope: NOT_FOUND: no such node /nope\n", err.toString());

    assertEquals(0, fs("mkdir", "--table", "/kv"));
    assertEquals(0, fs("put", dir.resolve("small.txt").toString(), "/kv/k1"));
    assertEquals(0, fs("ls", "-l", "/kv"));
    assertTrue(out.toString().startsWith("k "), out.toString());
    assertEquals(0, fs("mkdir", "--bag", "/data/bag"));
    assertEquals(0, fs("put", dir.resolve("small.txt").toString(), "/data/bag/a"));
    assertEquals(0, fs("put", dir.resolve("small.txt").toString(), "/data/bag/b"));
    assertEquals(0, fs("get", "/data/bag", dir.resolve("bag.out").toString()));
    assertEquals("hello\nhello\n", Files.readString(dir.resolve("bag.out")));

    assertEquals(0, fs("mv", "/data/in/s.txt", "/data"));
    assertEquals(0, fs("ls", "/data"));
    assertEquals("bag\nin\ns.txt\n", out.toString());
    assertEquals(0, fs("df"));
    assertTrue(out.toString().startsWith("Class"), out.toString());
    assertTrue(out.toString().contains("dram"), out.toString());
    assertEquals(0, fs("rm", "-r", "/data"));
    assertEquals(0, fs("ls", "/"));
    assertEquals("kv\n", out.toString());
    assertEquals(0, fs("rm", "-f", "/missing"));
  }
}
