package io.ferrite.kernel.testing;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.ServerState;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A {@link ClusterHarness} of several master groups (docs/RESILIENCE.md, "Master groups"), each one
 * master with the extensions {@link java.util.ServiceLoader} finds (a face's directory and the
 * placement directory) over a journal of its own ({@code <data.dir>/group-<g>}; group 0's is the
 * harness's {@link #master}), on the local fabric. {@link #masterAddress} names every group started
 * so far, so servers started later register with them all; {@link #uri(int)} names the first few.
 * The faces' group tests use it (the nodes face's injects its extensions: {@link #extensions}).
 */
public class GroupsHarness extends ClusterHarness {
  /** Groups 1..'s masters (index g - 1); null while stopped. */
  private final List<Master> others = new ArrayList<>();

  private final List<Fabric> otherFabrics = new ArrayList<>();

  /** A harness for {@code groups} groups; none is started yet. */
  public GroupsHarness(
      Path dataDir, Credentials credentials, Map<String, String> settings, int groups)
      throws IOException {
    super(dataDir, credentials, false, settings);
    for (int g = 1; g < groups; g++) {
      others.add(null);
    }
  }

  /** (Re)starts group {@code g}'s master over its journal (group 0: {@link #startMaster()}). */
  public Master startGroup(int g) {
    if (g == 0) {
      return startMaster();
    }
    while (others.size() < g) {
      others.add(null);
    }
    stopGroup(g);
    Fabric f = new LocalFabric(network);
    otherFabrics.add(f);
    FerriteConfig c = config.with(FerriteConfig.DATA_DIR, dataDir.resolve("group-" + g).toString());
    List<io.ferrite.kernel.master.MasterExtension> ext = extensions(g);
    Master m =
        ext == null
            ? Master.start(c, credentials, List.of(f))
            : Master.start(c, credentials, List.of(f), ext);
    others.set(g - 1, m);
    return m;
  }

  /**
   * The extensions group {@code g}'s master starts with (also group 0's, if a subclass's {@link
   * #startMaster()} asks): null, those {@link java.util.ServiceLoader} finds. A face's test that
   * holds its extensions (to look into them) returns its own.
   */
  protected List<io.ferrite.kernel.master.MasterExtension> extensions(int g) {
    return null;
  }

  /** Stops group {@code g}'s master (g >= 1). */
  public void stopGroup(int g) {
    Master m = others.get(g - 1);
    if (m != null) {
      m.close();
      others.set(g - 1, null);
    }
  }

  public Master masterOf(int g) {
    return g == 0 ? master : others.get(g - 1);
  }

  /** The groups the cluster has (started or stopped). */
  public int groups() {
    return others.size() + 1;
  }

  /** The cluster URI naming groups 0 to {@code n - 1}. */
  public String uri(int n) {
    List<String> parts = new ArrayList<>();
    parts.add(super.masterAddress());
    for (int g = 1; g < n; g++) {
      Master m = others.get(g - 1);
      // A stopped group keeps its place (its address is gone: clients see it UNAVAILABLE).
      parts.add(m == null ? "local://stopped-group-" + g : m.addresses().get("local"));
    }
    return String.join(";", parts);
  }

  @Override
  public String masterAddress() {
    return uri(groups());
  }

  /** A CLIENT-role client of the first {@code n} groups. */
  public FerriteClient client(int n) {
    return connect(uri(n), Role.CLIENT);
  }

  /** An ADMIN-role client of the first {@code n} groups (dropping tables, ...). */
  public FerriteClient adminClient(int n) {
    return connect(uri(n), Role.ADMIN);
  }

  /** A CLIENT-role client of group {@code g} alone (a URI naming its master only). */
  public FerriteClient groupClient(int g) {
    return connect(
        g == 0 ? super.masterAddress() : others.get(g - 1).addresses().get("local"), Role.CLIENT);
  }

  private FerriteClient connect(String uri, Role role) {
    return closeLater(
        Ferrite.connect(
            uri,
            ClientOptions.builder(credentials.as(role))
                .fabric("local")
                .fabrics(fabrics())
                .build()));
  }

  /** The group a new {@code name} of {@code kind} goes to among {@code groups}, by the rule. */
  public static int ruled(String kind, String name, int groups) {
    return PlacementProtocol.choose(PlacementProtocol.key(kind, name), groups);
  }

  /**
   * {@code count} names of {@code kind} per group of {@code groups} that the placement rule places
   * there ({@code prefix} and a random suffix, drawn from the test's seeded {@code random}), so
   * every group gets names whatever the seed; in the order drawn.
   */
  public static List<String> namesPerGroup(
      Random random, String kind, int groups, int count, String prefix) {
    List<String> out = new ArrayList<>();
    int[] have = new int[groups];
    while (out.size() < groups * count) {
      String name = prefix + Integer.toHexString(random.nextInt());
      int g = ruled(kind, name, groups);
      if (have[g] < count) {
        have[g]++;
        out.add(name);
      }
    }
    return out;
  }

  /** Waits until group {@code g}'s master sees {@code n} live servers. */
  public void awaitServers(int g, int n) throws InterruptedException {
    for (int i = 0; i < 1000; i++) {
      long alive =
          masterOf(g).state().members().stream()
              .filter(m -> m.state() == ServerState.ALIVE)
              .count();
      if (alive >= n) {
        return;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("group " + g + ": fewer than " + n + " servers registered");
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      for (int g = 1; g <= others.size(); g++) {
        stopGroup(g);
      }
      for (Fabric f : otherFabrics) {
        f.close();
      }
    }
  }
}
