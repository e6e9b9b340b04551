package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Malformed calls get an error each; the master keeps serving. */
@ExtendWith(SeedExtension.class)
class MasterBadInputTest {
  static final Duration DEADLINE = Duration.ofSeconds(5);
  static final List<Integer> OPCODES =
      List.of(
          MasterProtocol.REGISTER,
          MasterProtocol.HEARTBEAT,
          MasterProtocol.ADD_REGION,
          MasterProtocol.OPEN_SESSION,
          MasterProtocol.RENEW_SESSION,
          MasterProtocol.CLOSE_SESSION,
          MasterProtocol.ALLOCATE,
          MasterProtocol.FREE,
          MasterProtocol.OWNED,
          MasterProtocol.REGIONS);

  TestSeed seed;
  Random random;
  @TempDir Path dir;
  LocalCluster cluster;
  FabricConnection conn;

  @BeforeEach
  void start(TestSeed seed, Random random) throws Exception {
    this.seed = seed;
    this.random = random;
    cluster = new LocalCluster(dir);
    cluster.startMaster();
    cluster.startServer("s1");
    conn =
        cluster
            .fabrics()
            .open("local")
            .connect(cluster.masterAddress(), ConnectOptions.of(LocalCluster.CREDENTIALS));
  }

  @AfterEach
  void stop() throws Exception {
    conn.close();
    cluster.close();
  }

  ErrorCode callFails(int service, int opcode, ByteBuffer body) {
    FerriteException e =
        assertThrows(FerriteException.class, () -> conn.callSync(service, opcode, body, DEADLINE));
    return e.code();
  }

  void masterStillServes() {
    MasterStub stub = new MasterStub(conn, DEADLINE);
    assertEquals(1, stub.status().members().size());
    long s = stub.openSession("after-bad-input", 0).sessionId();
    assertEquals(1, io.ferrite.fabric.Futures.join(stub.allocate(s, 1, "", false, "")).size());
  }

  @Test
  void unknownOpcodeAndServiceAreRejected() {
    assertEquals(
        ErrorCode.UNKNOWN_OPCODE, callFails(MasterProtocol.SERVICE, 999, ByteBuffer.allocate(0)));
    assertEquals(ErrorCode.UNKNOWN_SERVICE, callFails(77, 1, ByteBuffer.allocate(0)));
    masterStillServes();
  }

  @Test
  void emptyAndTruncatedBodiesAreInvalidArguments() {
    for (int op : OPCODES) {
      assertEquals(
          ErrorCode.INVALID_ARGUMENT,
          callFails(MasterProtocol.SERVICE, op, ByteBuffer.allocate(0)),
          "empty body of opcode " + op);
    }
    // A well-formed ALLOCATE cut at every length.
    Wire.Writer w = new Wire.Writer().i64(1).i32(1).str("dram").u8(0).str("owner");
    byte[] full = w.toArray();
    for (int len = 0; len < full.length; len++) {
      assertEquals(
          ErrorCode.INVALID_ARGUMENT,
          callFails(MasterProtocol.SERVICE, MasterProtocol.ALLOCATE, ByteBuffer.wrap(full, 0, len)),
          "ALLOCATE cut at " + len);
    }
    // Trailing bytes are as wrong as missing ones.
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        callFails(
            MasterProtocol.SERVICE, MasterProtocol.STATUS, ByteBuffer.wrap(new byte[] {1, 2, 3})));
    masterStillServes();
  }

  @Test
  void lyingCountsAndRandomBytesNeverBreakTheMaster() {
    // A count far beyond the body must be refused before anything is allocated for it.
    Wire.Writer w = new Wire.Writer().i64(1).i32(Integer.MAX_VALUE);
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        callFails(MasterProtocol.SERVICE, MasterProtocol.FREE, w.toBuffer()));
    Wire.Writer reg = new Wire.Writer().i32(-1).str("x").str("h").i32(-5);
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        callFails(MasterProtocol.SERVICE, MasterProtocol.REGISTER, reg.toBuffer()));
    Random rnd = random;
    for (int i = 0; i < 300; i++) {
      byte[] junk = new byte[rnd.nextInt(64)];
      rnd.nextBytes(junk);
      int op = OPCODES.get(rnd.nextInt(OPCODES.size()));
      try {
        conn.callSync(MasterProtocol.SERVICE, op, ByteBuffer.wrap(junk), DEADLINE);
      } catch (FerriteException e) {
        // Any typed error is fine; INTERNAL would mean a decoder let junk through.
        if (e.code() == ErrorCode.INTERNAL) {
          throw new AssertionError("opcode " + op + " junk " + seed + ": " + e.getMessage(), e);
        }
      }
    }
    masterStillServes();
  }
}
