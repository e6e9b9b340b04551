package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A network partition cuts a memory server's host off ({@link NetHosts#isolate}): the master,
 * hearing no heartbeat, declares it DEAD; a client reading a file whose blocks are on it gets a
 * clear error naming that, while a file on the other server reads on; after {@link NetHosts#heal}
 * the server (the same process, its memory intact) registers again and its file reads back whole.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class PartitionTest extends HostsClusterTest {
  static final String CLUSTER = "partition-test";

  private FerriteClient client() {
    FerriteClient c =
        Ferrite.connect(
            masterUri(1),
            ClientOptions.builder(credentials)
                .clientName("partition-test")
                .connectTimeout(Duration.ofSeconds(2))
                .rpcTimeout(Duration.ofSeconds(2))
                .opTimeout(Duration.ofSeconds(2))
                .build());
    clients.add(c);
    return c;
  }

  private ServerState state(String name) {
    for (MemberInfo m : members(1)) {
      if (m.name().equals(name)) {
        return m.state();
      }
    }
    return null;
  }

  private static void write(Nodes nodes, String path, String at, byte[] data) {
    try (NodeWriter w = nodes.create(path, CreateOptions.at(at))) {
      w.writeSync(ByteBuffer.wrap(data));
    }
  }

  private static byte[] read(Nodes nodes, String path) {
    NodeReader r = nodes.open(path);
    ByteBuffer b = ByteBuffer.allocate((int) r.size());
    r.readFully(0, b);
    return b.array();
  }

  @Test
  void aServerCutOffIsDeclaredDeadAndServesAgainAfterTheHeal(Random random) throws Exception {
    newHostsCluster(3, CLUSTER, "ferrite-partition-");
    startMasterOn(1, "master", "server.dead.timeout=2s");
    startServerOn(2, 1, "s2", "64m", "0");
    startServerOn(3, 1, "s3", "64m", "0");
    await("two ALIVE servers", () -> serversAlive(1, 2));

    byte[] a = new byte[100_000 + random.nextInt(50_000)];
    byte[] b = new byte[100_000 + random.nextInt(50_000)];
    random.nextBytes(a);
    random.nextBytes(b);
    Nodes nodes = new Nodes(client());
    write(nodes, "/on-s2", "s2", a);
    write(nodes, "/on-s3", "s3", b);
    assertArrayEquals(a, read(nodes, "/on-s2"));

    hosts.isolate(2);
    await("s2 DEAD", () -> state("s2") == ServerState.DEAD);
    int s2Id =
        members(1).stream().filter(m -> m.name().equals("s2")).findFirst().orElseThrow().serverId();
    assertEquals(ServerState.ALIVE, state("s3"));
    Nodes fresh = new Nodes(client());
    FerriteException e = assertThrows(FerriteException.class, () -> read(fresh, "/on-s2"));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.toString());
    assertTrue(
        e.getMessage().contains("server " + s2Id + " (s2) is DEAD at the master: tcp://"),
        e.getMessage());
    assertArrayEquals(b, read(fresh, "/on-s3"), "the other server's file reads on");

    hosts.heal(2);
    await("s2 ALIVE again", () -> state("s2") == ServerState.ALIVE);
    byte[] back =
        await("/on-s2 readable after the heal", () -> read(new Nodes(client()), "/on-s2"));
    assertArrayEquals(a, back, "s2's memory survived the partition");
    assertArrayEquals(a, read(nodes, "/on-s2"), "and the first client reads it again too");
    assertTrue(serversAlive(1, 2));
  }
}
