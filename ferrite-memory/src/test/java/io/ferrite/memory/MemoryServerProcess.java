package io.ferrite.memory;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.server.MemoryServer;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * A memory server in its own JVM, serving tcp, for {@link PausedServerTest}: prints "registered ID
 * INCARNATION" once registered, then serves until it is killed (the test stops it).
 *
 * <p>Arguments: master address, secret (hex), then {@code key=value} configuration settings.
 */
public final class MemoryServerProcess {
  private MemoryServerProcess() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    Map<String, String> settings = new HashMap<>();
    for (int i = 2; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      settings.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    FerriteConfig cfg = FerriteConfig.builder().flags(settings).build();
    Credentials credentials = new Credentials(cfg.clusterId(), HexFormat.of().parseHex(args[1]));
    Fabric tcp = FabricFactory.standard().open("tcp");
    MemoryServer server = MemoryServer.start(cfg, credentials, List.of(tcp), args[0], List.of());
    out.println("registered " + server.serverId() + " " + server.incarnation());
    Thread.sleep(Long.MAX_VALUE);
  }
}
