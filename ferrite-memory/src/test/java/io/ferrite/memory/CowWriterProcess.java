package io.ferrite.memory;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * A copy-on-write writer in its own JVM, for {@link CopyOnWriteKillTest}: fills the whole
 * allocation with 1, 2, 3, ... (every byte the same value per write) until it is killed, and prints
 * "published N" after each write.
 *
 * <p>Arguments: master address, cluster id, secret (hex), namespace, address, length.
 */
public final class CowWriterProcess {
  private CowWriterProcess() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    Credentials credentials = new Credentials(args[1], HexFormat.of().parseHex(args[2]));
    FerriteClient client =
        Ferrite.connect(args[0], ClientOptions.builder(credentials).fabric("tcp").build());
    RStore store = new RStore(client);
    Namespace ns = store.joinNamespace(args[3]);
    long address = Long.parseLong(args[4]);
    int length = Integer.parseInt(args[5]);
    Mapping m = ns.raddress(address, length).map(MemoryFlags.MAP_NO_BUFFER);
    ByteBuffer data = ByteBuffer.allocateDirect(length);
    for (int v = 1; ; v = v % 120 + 1) {
      for (int i = 0; i < length; i++) {
        data.put(i, (byte) v);
      }
      try {
        m.writeSync(0, data);
        out.println("published " + v);
      } catch (FerriteException e) {
        out.println("retry after " + e.getMessage());
        Thread.sleep(5);
      }
    }
  }
}
