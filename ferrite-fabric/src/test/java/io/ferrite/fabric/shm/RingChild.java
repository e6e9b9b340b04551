package io.ferrite.fabric.shm;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Futures;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Random;

/**
 * A client process for {@link ShmRingKillTest}: connects over shm, says READY after its first
 * answer, then calls from four threads until it is killed (echoes, answers that come later, calls
 * that block a service thread), so that a kill lands with calls in every state.
 */
public final class RingChild {
  private RingChild() {}

  public static void main(String[] args) throws Exception {
    String address = args[0];
    Credentials creds = new Credentials(args[1], HexFormat.of().parseHex(args[2]));
    ShmFabric fabric = new ShmFabric();
    FabricConnection c = fabric.connect(address, ConnectOptions.of(creds));
    // Inline: the service threads may all be held by BLOCK calls of a client killed before.
    Futures.join(
        c.call(
            RingTestSupport.SVC,
            RingTestSupport.ECHO_INLINE,
            ByteBuffer.allocate(8),
            Duration.ofSeconds(30)));
    System.out.println("READY");
    System.out.flush();
    for (int t = 0; t < 4; t++) {
      long seed = t;
      Thread th =
          new Thread(
              () -> {
                Random random = new Random(seed);
                while (true) {
                  int op = random.nextInt(3);
                  ByteBuffer req =
                      op == 1
                          ? ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(500).flip()
                          : ByteBuffer.wrap(
                              "x".repeat(random.nextInt(300)).getBytes(StandardCharsets.UTF_8));
                  int opcode =
                      op == 0
                          ? RingTestSupport.ECHO_INLINE
                          : op == 1 ? RingTestSupport.LATER : RingTestSupport.BLOCK;
                  try {
                    c.call(RingTestSupport.SVC, opcode, req, Duration.ofSeconds(30));
                    if (op != 2) {
                      Futures.join(
                          c.call(RingTestSupport.SVC, opcode, req, Duration.ofSeconds(30)));
                    }
                  } catch (RuntimeException e) {
                    return;
                  }
                }
              },
              "ring-child-" + t);
      th.start();
    }
    Thread.sleep(Long.MAX_VALUE);
  }
}
