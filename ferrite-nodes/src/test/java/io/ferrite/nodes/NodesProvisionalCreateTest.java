package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.HeldFsync;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A File's CREATE is answered before its journal record is fsynced (a provisional answer: the File
 * is invisible and holds no blocks until its close), and its close (PUBLISH) only after the fsync
 * that covers both records: a user's create-then-close costs one fsync. Everything else still
 * waits: a Directory's create, a close, a MAP. The master's fsync is held shut by {@link HeldFsync}
 * (the real fsync behind a gate), so "not answered" is observed, not guessed.
 */
class NodesProvisionalCreateTest {
  /** How long a held answer is given to (wrongly) arrive. A bound, not a timing assertion. */
  static final long HELD_MILLIS = 300;

  @TempDir Path dir;
  final HeldFsync fsync = new HeldFsync();
  ClusterHarness cluster;

  @AfterEach
  void stop() throws Exception {
    fsync.open();
    if (cluster != null) {
      cluster.close();
    }
  }

  private Nodes start() throws Exception {
    Map<String, String> settings = new HashMap<>();
    settings.put(FerriteConfig.JOURNAL_FSYNC, "true");
    settings.put(FerriteConfig.CAPACITY_DRAM, "4m");
    settings.put(FerriteConfig.CAPACITY_DISK, "0");
    // Heartbeat answers wait for held fsyncs too: a server must not be declared dead meanwhile.
    settings.put(FerriteConfig.DEAD_TIMEOUT, "60s");
    cluster =
        new ClusterHarness(
            dir,
            new Credentials(
                "provisional", "0123456789abcdef-provisional".getBytes(StandardCharsets.UTF_8)),
            false,
            settings) {
          @Override
          protected Master launchMaster(List<Fabric> on, List<MasterExtension> extensions) {
            return fsync.start(config, credentials, on, extensions);
          }
        };
    cluster.startMaster(List.of(new NodesMaster(Duration.ofMillis(50))));
    cluster.startServer("s1");
    cluster.awaitServers(1);
    Nodes nodes = new Nodes(cluster.client());
    nodes.mkdir("/d"); // answered: the start records are durable from here on
    return nodes;
  }

  @Test
  void aFileCreateIsAnsweredBeforeItsFsyncAndItsCloseOnlyAfter() throws Exception {
    Nodes nodes = start();
    fsync.hold();
    CompletableFuture<NodeWriter> created =
        CompletableFuture.supplyAsync(() -> nodes.create("/d/f"));
    NodeWriter w = created.get(30, TimeUnit.SECONDS); // would hang if the create waited
    assertTrue(fsync.entered.tryAcquire(30, TimeUnit.SECONDS), "the create's record not fsynced");

    CompletableFuture<Void> closed =
        CompletableFuture.runAsync(
            () -> {
              try (OutputStream out = w.outputStream()) {
                out.write(new byte[] {1, 2, 3}); // a MAP (blocks), then the PUBLISH
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
    CompletableFuture<NodeInfo> dir = CompletableFuture.supplyAsync(() -> nodes.mkdir("/d/sub"));
    Thread.sleep(HELD_MILLIS);
    assertFalse(closed.isDone(), "a close was answered while the fsync covering it was held");
    assertFalse(dir.isDone(), "a directory create was answered before its fsync");

    fsync.open();
    closed.get(30, TimeUnit.SECONDS);
    dir.get(30, TimeUnit.SECONDS);
    NodeInfo f = nodes.lookupAtMaster("/d/f");
    assertEquals(3, f.size());
    assertFalse(f.writing());
  }

  @Test
  void aRestartedMasterNeverHandsOutAnIdAgain() throws Exception {
    Nodes nodes = start();
    long before;
    try (NodeWriter w = nodes.create("/d/a")) {
      before = w.info().id();
    }
    cluster.startMaster(List.of(new NodesMaster(Duration.ofMillis(50))));
    Nodes again = new Nodes(cluster.client());
    long after;
    try (NodeWriter w = again.create("/d/b")) {
      after = w.info().id();
    }
    // A provisional create's id that a crash forgot could otherwise be issued again, and a stale
    // writer's close would land on someone else's node.
    assertTrue(
        after > before + (1L << 32) - 1,
        "id after a restart " + after + " (expected: > " + before + " + 2^32)");
  }
}
