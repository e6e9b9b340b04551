package io.ferrite.cli;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.fabric.local.LocalNetwork;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * The fabrics a CLI process opens: tcp (with TLS when configured) and shm from {@link
 * FabricFactory#standard(FerriteConfig)}, and the in-JVM local fabric on one network shared by the
 * whole process. Closes what it opened.
 */
final class Fabrics implements AutoCloseable {
  private final LocalNetwork network = new LocalNetwork();
  private final List<Fabric> opened = new ArrayList<>();
  private final FabricFactory standard;

  /** Without TLS. */
  Fabrics() {
    this.standard = FabricFactory.standard();
  }

  /** As {@code cfg} configures them ({@code tls.*}). */
  Fabrics(FerriteConfig cfg) {
    this.standard = FabricFactory.standard(cfg);
  }

  /**
   * A client command's: {@code t}'s configuration (the environment's {@code FERRITE_*} fabric keys)
   * and TLS on tcp trusting {@code t}'s trust file, or none.
   */
  Fabrics(ClusterTarget.Resolved t) {
    this.standard = FabricFactory.client(t.config(), t.tls());
  }

  FabricFactory factory() {
    return name -> name.equals("local") ? new LocalFabric(network) : standard.open(name);
  }

  /** Opens one fabric of each name, owned by this object. */
  List<Fabric> open(List<String> names) {
    List<Fabric> out = new ArrayList<>();
    for (String n : names) {
      Fabric f = factory().open(n);
      opened.add(f);
      out.add(f);
    }
    return out;
  }

  @Override
  public void close() {
    for (Fabric f : opened) {
      f.close();
    }
    opened.clear();
  }
}
