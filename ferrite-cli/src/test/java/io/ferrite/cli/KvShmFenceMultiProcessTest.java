package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The kv lease reaches same-host readers (docs/KV.md "Leases"): a client that maps a replicated
 * shard's regions over shm reads them without the server, so a primary that was paused (SIGSTOP) or
 * killed (SIGKILL) leaves its memory readable after its backup was promoted and took a newer write.
 * The reader checks the shard's lease word after its read and refuses what it read past the
 * deadline, as a tcp reader is refused by the server: it asks the master and reads the promoted
 * copy. Separate JVMs: a master and three servers serving tcp and shm, the readers in this JVM.
 */
@Tag("multiprocess")
class KvShmFenceMultiProcessTest extends ProcessClusterTest {
  private FerriteClient client(String fabric) {
    FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials).fabric(fabric).clientName("kv-fence-mp").build());
    clients.add(c);
    return c;
  }

  /** A memory server serving tcp and shm, with the master's dead timeout (its lease: half). */
  private Process startShmServer(String name) throws IOException {
    return startServerOver("tcp,shm", name, "48m", "0", "server.dead.timeout=1s");
  }

  /**
   * A cluster of three servers and a replicated table {@code t} holding k = v1, read once over shm
   * by the returned handle (which so caches the primary's layout and maps its regions); {@code
   * servers} gets the processes by name.
   */
  private KvTable clusterWithAStaleShmReader(String id, Map<String, Process> servers)
      throws Exception {
    newCluster(id, "ferrite-" + id + "-");
    startMaster("master", "server.dead.timeout=1s");
    FerriteClient admin = await("the master", () -> client("tcp"));
    for (String name : List.of("s1", "s2", "s3")) {
      servers.put(name, startShmServer(name));
    }
    await(
        "3 ALIVE servers",
        () ->
            admin.status().members().stream()
                    .filter(m -> m.info().state() == ServerState.ALIVE && m.regions() > 0)
                    .count()
                == 3);
    TableOptions o =
        TableOptions.DEFAULTS
            .withShards(1)
            .withSlotsPerShard(1024)
            .withExtents(1 << 20, 4)
            .withLimits(64, 1024)
            .withReplicas(2);
    new KvClient(admin).createTable("t", o);
    FerriteClient shm = client("shm");
    KvTable stale = new KvClient(shm).table("t");
    stale.put(b("k"), b("v1"));
    assertArrayEquals(b("v1"), stale.get(b("k")), "the reader caches the primary's layout");
    int primary = stale.info().servers()[0];
    assertTrue(
        shm.connection(primary).mapsRegions(),
        "the reader reads the primary's regions from its own mapping (shm)");
    return stale;
  }

  private Process primaryOf(KvTable t, Map<String, Process> servers) {
    int primary = t.info().servers()[0];
    String name =
        client("tcp").refreshMembers().stream()
            .filter(m -> m.serverId() == primary)
            .map(MemberInfo::name)
            .findFirst()
            .orElseThrow();
    return servers.get(name);
  }

  /** Waits until the master promoted a backup of shard 0 away from {@code primary}. */
  private void awaitPromotion(int primary) throws InterruptedException {
    FerriteClient admin = client("tcp");
    await(
        "the backup promoted", () -> new KvClient(admin).table("t").info().servers()[0] != primary);
  }

  @Test
  void aPausedPrimarysMemoryNeverAnswersAnShmReaderAfterItWasDeposed() throws Exception {
    Map<String, Process> servers = new HashMap<>();
    KvTable stale = clusterWithAStaleShmReader("kv-fence-paused", servers);
    int primary = stale.info().servers()[0];
    Process paused = primaryOf(stale, servers);
    NetHosts.signal(paused, "STOP");
    try {
      awaitPromotion(primary);
      new KvClient(client("tcp")).table("t").put(b("k"), b("v2")); // at the promoted backup
      // Still stopped: its memory holds v1 and the reader's mapping of it is intact, its control
      // socket open. Only the lease word tells the reader its data is no longer the shard's.
      assertArrayEquals(
          b("v2"), stale.get(b("k")), "a read after the acknowledged v2 reads v2\n" + logs());
      assertNotEquals(primary, stale.info().servers()[0], "the stale handle found the promotion");
    } finally {
      NetHosts.signal(paused, "CONT");
    }
    stale.put(b("k"), b("v3"));
    assertArrayEquals(b("v3"), stale.get(b("k")));
  }

  /**
   * The same after a SIGKILL: the dead primary's region files stay in the shm directory and the
   * reader's mappings of them stay readable. Here the lease word is a second line of defence: the
   * reader's shm connection sees its control socket close at the kill and stops using its mappings
   * (and {@link KvTable} reconnects, which fails), so this passes without the lease check too; the
   * word covers the window before the reader notices the close.
   */
  @Test
  void aKilledPrimarysMemoryNeverAnswersAnShmReaderAfterItWasDeposed() throws Exception {
    Map<String, Process> servers = new HashMap<>();
    KvTable stale = clusterWithAStaleShmReader("kv-fence-killed", servers);
    int primary = stale.info().servers()[0];
    primaryOf(stale, servers).destroyForcibly().waitFor(); // SIGKILL: its region files stay
    awaitPromotion(primary);
    new KvClient(client("tcp")).table("t").put(b("k"), b("v2"));
    assertArrayEquals(
        b("v2"), stale.get(b("k")), "a read after the acknowledged v2 reads v2\n" + logs());
    assertNotEquals(primary, stale.info().servers()[0], "the stale handle found the promotion");
  }
}
