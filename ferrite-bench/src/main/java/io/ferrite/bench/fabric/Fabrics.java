package io.ferrite.bench.fabric;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.tcp.TcpFabric;
import java.util.List;

/** Makes a fabric from its name, as given to {@code --fabrics}. */
public final class Fabrics {
  /** Every name {@link #create} knows. */
  public static final List<String> NAMES = List.of("local", "shm", "tcp");

  private Fabrics() {}

  /**
   * A new fabric called {@code name}; the caller closes it. A local fabric gets a network of its
   * own, so its server and client must come from the same instance.
   */
  public static Fabric create(String name) {
    return switch (name) {
      case "local" -> new LocalFabric(new LocalNetwork());
      case "shm" -> new ShmFabric();
      case "tcp" -> new TcpFabric();
      default ->
          throw new IllegalArgumentException(
              "fabric: " + name + " (expected one of: " + String.join(", ", NAMES) + ")");
    };
  }
}
