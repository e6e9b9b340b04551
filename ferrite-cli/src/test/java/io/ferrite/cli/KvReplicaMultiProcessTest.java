package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableInfo;
import io.ferrite.kv.TableOptions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Replicated kv shards with separate JVMs (docs/KV.md "Replication"): a master and three memory
 * servers over tcp, a table with 2 copies of each shard under {@code always}; a writer puts a
 * stream of keys, the server holding shard 0's primary is SIGKILLed mid-stream, the master declares
 * it DEAD (1 s) and promotes the backups, the writer carries on, and every put that was
 * acknowledged — before, during and after the failover — reads back from the surviving copies
 * without the dead server ever coming back.
 */
@Tag("multiprocess")
class KvReplicaMultiProcessTest extends ProcessClusterTest {
  private FerriteClient client() {
    return tcpClient("kv-replica-mp");
  }

  private static long alive(FerriteClient c) {
    return c.status().members().stream()
        .filter(m -> m.info().state() == ServerState.ALIVE && m.regions() > 0)
        .count();
  }

  @Test
  void everyAcknowledgedPutSurvivesASigkilledPrimaryWithTwoReplicas() throws Exception {
    newCluster("kv-replica-mp", "ferrite-kv-replica-mp-");
    startMaster("master", "server.dead.timeout=1s");
    Map<String, Process> servers = new HashMap<>();
    FerriteClient admin = await("the master", this::client);
    for (String name : List.of("s1", "s2", "s3")) {
      servers.put(name, startServer(name, "48m", "0"));
    }
    await("3 ALIVE servers", () -> alive(admin) == 3);
    TableOptions o =
        TableOptions.DEFAULTS
            .withShards(4)
            .withSlotsPerShard(8192)
            .withExtents(1 << 20, 4)
            .withLimits(64, 1024)
            .withDurability(TableOptions.Durability.ALWAYS)
            .withReplicas(2);
    KvTable t = new KvClient(admin).createTable("replicated", o);
    TableInfo before = t.info();
    int victim = before.servers()[0];
    String victimName =
        admin.refreshMembers().stream()
            .filter(m -> m.serverId() == victim)
            .map(MemberInfo::name)
            .findFirst()
            .orElseThrow();

    KvTable w = new KvClient(client()).table("replicated");
    List<Integer> acked = new CopyOnWriteArrayList<>();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread writer =
        new Thread(
            () -> {
              try {
                for (int i = 0; !stop.get(); i++) {
                  w.put(b("key-" + i), b("value-" + i));
                  acked.add(i);
                }
              } catch (Throwable e) {
                failure.set(e);
              }
            },
            "kv-replica-mp-writer");
    writer.start();
    await("200 acknowledged puts", () -> acked.size() >= 200 || failure.get() != null);
    servers.get(victimName).destroyForcibly().waitFor(); // SIGKILL, mid-stream
    int atKill = acked.size();
    await(
        "300 more acknowledged puts after the failover",
        () -> acked.size() >= atKill + 300 || failure.get() != null);
    stop.set(true);
    writer.join();
    if (failure.get() != null) {
      throw new AssertionError("the writer failed across the failover\n" + logs(), failure.get());
    }
    TableInfo after = new KvClient(admin).table("replicated").info();
    assertNotEquals(victim, after.servers()[0], "shard 0's backup took over");
    KvTable again = new KvClient(client()).table("replicated");
    for (int i : acked) {
      assertArrayEquals(b("value-" + i), again.get(b("key-" + i)), "acknowledged put " + i);
    }
    assertTrue(acked.size() >= atKill + 300, "acknowledged: " + acked.size());
    // The master's automatic repair (nobody calls it) gives every shard its second copy again, on
    // the two live servers; then SIGKILL a second server: each shard's repaired copy serves every
    // acknowledged put alone.
    await(
        "every shard with 2 complete copies again",
        () -> {
          TableInfo now = new KvClient(admin).table("replicated").info();
          for (int s = 0; s < now.options().shards(); s++) {
            boolean filling =
                java.util.Arrays.stream(now.backupsOf(s)).anyMatch(TableInfo::isSyncing);
            if (now.copies(s) != 2 || filling) {
              return false;
            }
          }
          return true;
        });
    int second = new KvClient(admin).table("replicated").info().servers()[0];
    String secondName =
        admin.refreshMembers().stream()
            .filter(m -> m.serverId() == second)
            .map(MemberInfo::name)
            .findFirst()
            .orElseThrow();
    servers.get(secondName).destroyForcibly().waitFor();
    await(
        "the failover away from the second server",
        () -> {
          TableInfo now = new KvClient(admin).table("replicated").info();
          return java.util.Arrays.stream(now.servers()).noneMatch(x -> x == second);
        });
    KvTable last = new KvClient(client()).table("replicated");
    for (int i : acked) {
      assertArrayEquals(b("value-" + i), last.get(b("key-" + i)), "acknowledged put " + i);
    }
  }

  /**
   * A primary paused (SIGSTOP) long enough to be declared DEAD is deposed: its backup is promoted
   * and takes a newer write. When the old primary resumes, a reader whose cached layout still names
   * it must not read the old value there (issue #20's Jepsen run: a resumed, deposed primary
   * answered one-sided reads with old data and took writes). Its lease from the master lapsed while
   * it was stopped (docs/KV.md "Leases"): it answers UNAVAILABLE, and after it heard from the
   * master its copy is retired (MOVED), so the reader asks the master and reads the promoted copy.
   * A writer with the same stale placement ends there too.
   */
  @Test
  void aPausedPrimaryThatWasDeposedNeverAnswersWithOldData() throws Exception {
    newCluster("kv-paused-mp", "ferrite-kv-paused-mp-");
    startMaster("master", "server.dead.timeout=1s");
    Map<String, Process> servers = new HashMap<>();
    FerriteClient admin = await("the master", this::client);
    for (String name : List.of("s1", "s2", "s3")) {
      // The master's dead timeout on the servers too: their lease (kv.lease auto) is half of it.
      servers.put(name, startServer(name, "48m", "0", "server.dead.timeout=1s"));
    }
    await("3 ALIVE servers", () -> alive(admin) == 3);
    TableOptions o =
        TableOptions.DEFAULTS
            .withShards(1)
            .withSlotsPerShard(1024)
            .withExtents(1 << 20, 4)
            .withLimits(64, 1024)
            .withReplicas(2);
    new KvClient(admin).createTable("paused", o);
    KvTable stale = new KvClient(client()).table("paused");
    stale.put(b("k"), b("v1"));
    assertArrayEquals(b("v1"), stale.get(b("k")), "the reader caches the primary's layout");
    int primary = stale.info().servers()[0];
    String primaryName =
        admin.refreshMembers().stream()
            .filter(m -> m.serverId() == primary)
            .map(MemberInfo::name)
            .findFirst()
            .orElseThrow();
    Process paused = servers.get(primaryName);
    NetHosts.signal(paused, "STOP");
    try {
      await(
          "the backup promoted",
          () -> new KvClient(admin).table("paused").info().servers()[0] != primary);
      new KvClient(client()).table("paused").put(b("k"), b("v2")); // at the promoted backup
    } finally {
      NetHosts.signal(paused, "CONT");
    }
    // The stale handle has never heard of the promotion: its layout names the resumed server.
    assertArrayEquals(
        b("v2"), stale.get(b("k")), "a read after the acknowledged v2 reads v2\n" + logs());
    stale.put(b("k"), b("v3"));
    assertArrayEquals(b("v3"), new KvClient(client()).table("paused").get(b("k")));
    assertArrayEquals(b("v3"), stale.get(b("k")));
    assertNotEquals(primary, stale.info().servers()[0], "the stale handle found the promotion");
  }
}
