package io.ferrite.fabric.local;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.ServerSpec;
import java.security.MessageDigest;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The in-JVM fabric, for deterministic tests with fault injection ({@link LocalFaults}, {@link
 * LocalNetwork#kill}). Regions are real {@link io.ferrite.fabric.MappedRegion}s; one-sided ops are
 * memory accesses on the caller's thread, so torn reads are as real as on shm.
 *
 * <p>Authentication compares {@link io.ferrite.fabric.Credentials} directly (both ends are in one
 * JVM); a mismatch is refused with {@code AUTH_FAILED} like on the wire fabrics.
 */
public final class LocalFabric implements Fabric {
  private final LocalNetwork network;
  private final ScheduledThreadPoolExecutor scheduler;
  private final Set<AutoCloseable> owned = ConcurrentHashMap.newKeySet();

  public LocalFabric(LocalNetwork network) {
    this.network = network;
    this.scheduler =
        new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("local-fabric", true));
    this.scheduler.setRemoveOnCancelPolicy(true);
  }

  public LocalNetwork network() {
    return network;
  }

  @Override
  public String name() {
    return "local";
  }

  @Override
  public FabricServer serve(ServerSpec spec) {
    LocalServer s = new LocalServer(network, spec, owned::remove);
    owned.add(s);
    return s;
  }

  @Override
  public FabricConnection connect(String address, ConnectOptions options) {
    if (!address.startsWith("local://")) {
      throw new FerriteException(ErrorCode.UNSUPPORTED, "not a local fabric address: " + address);
    }
    LocalServer s = network.lookup(address);
    Credentials server = s.spec().credentials();
    Credentials client = options.credentials();
    if (!server.clusterId().equals(client.clusterId())) {
      throw new FerriteException(
          ErrorCode.AUTH_FAILED,
          address
              + ": cluster id '"
              + client.clusterId()
              + "' (expected: '"
              + server.clusterId()
              + "')");
    }
    // As the wire fabrics' handshake (netty/Handshake): the server derives the secret of the role
    // the client claims from its root and compares; a mismatch is the client's wrong secret.
    Role role = client.role();
    if (!server.canDerive(role)
        || !MessageDigest.isEqual(server.secretFor(role), client.secretFor(role))) {
      throw new FerriteException(ErrorCode.AUTH_FAILED, client.wrongSecretMessage(address));
    }
    LocalConnection c = new LocalConnection(s, role, scheduler, owned::remove);
    owned.add(c);
    return c;
  }

  @Override
  public void close() {
    for (AutoCloseable c : java.util.List.copyOf(owned)) {
      try {
        c.close();
      } catch (Exception e) {
        // Closing local objects does not fail; nothing to report.
        continue;
      }
    }
    owned.clear();
    scheduler.shutdownNow();
  }
}
