package io.ferrite.fabric.local;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The in-JVM "network" of the local fabric: the endpoints by address and the faults in force. One
 * instance is shared, explicitly, by every {@link LocalFabric} that should see each other's
 * endpoints (there is no global registry).
 */
public final class LocalNetwork {
  private final ConcurrentHashMap<String, LocalServer> servers = new ConcurrentHashMap<>();
  private final AtomicInteger names = new AtomicInteger();
  private final LocalFaults faults = new LocalFaults();

  /** The faults applied to every op on this network. */
  public LocalFaults faults() {
    return faults;
  }

  String register(LocalServer server, int nodeId) {
    String address = "local://node-" + nodeId + "-" + names.incrementAndGet();
    servers.put(address, server);
    return address;
  }

  void deregister(String address, LocalServer server) {
    servers.remove(address, server);
  }

  LocalServer lookup(String address) {
    LocalServer s = servers.get(address);
    if (s == null || s.isDead()) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "no endpoint at " + address);
    }
    return s;
  }

  /**
   * Kills the endpoint at {@code address} as a crash would: every connection to it fails at once
   * ({@code UNAVAILABLE}), ops in flight fail, new connects are refused. Its regions are left as
   * they are (like a server whose process died with its memory files in place).
   */
  public void kill(String address) {
    LocalServer s = servers.remove(address);
    if (s != null) {
      s.kill();
    }
  }
}
