package io.ferrite.nodes;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.master.PlacementDirectory;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link ClusterHarness} with several master groups, each one master (nodes face and placement
 * directory) over a journal of its own ({@code <data.dir>/group-<g>/master}, group 0's in {@code
 * <data.dir>/master}), on the local fabric. {@link #masterAddress} names every running group, so
 * servers and clients started later know them all; {@link #uri(int)} names the first few.
 */
final class GroupsCluster extends ClusterHarness {
  /** The masters of groups 1..; group 0's is {@link #master}. Null while stopped. */
  final List<Master> others = new ArrayList<>();

  /** Each group's nodes extension and placement directory, as last started. */
  final Map<Integer, NodesMaster> nodesExt = new HashMap<>();

  final Map<Integer, PlacementDirectory> placement = new HashMap<>();

  private final List<Fabric> otherFabrics = new ArrayList<>();

  GroupsCluster(Path dataDir, int groups) throws IOException {
    super(dataDir, NodesCluster.CREDENTIALS, false, settings());
    for (int g = 1; g < groups; g++) {
      others.add(null);
    }
  }

  private static Map<String, String> settings() {
    Map<String, String> m = new HashMap<>();
    // 8 regions of 256 KiB per server: 4 per group with two groups, 2-3 with three.
    m.put(FerriteConfig.CAPACITY_DRAM, "2m");
    m.put(FerriteConfig.CAPACITY_DISK, "0");
    m.put(FerriteConfig.SESSION_LEASE, "1s");
    return m;
  }

  private List<MasterExtension> extensions(int g) {
    NodesMaster n = new NodesMaster(Duration.ofMillis(50));
    PlacementDirectory p = new PlacementDirectory();
    nodesExt.put(g, n);
    placement.put(g, p);
    return List.of(n, p);
  }

  @Override
  public Master startMaster() {
    return startMaster(extensions(0));
  }

  /** (Re)starts group {@code g}'s master over its journal. */
  Master startGroup(int g) {
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
    Master m = Master.start(c, credentials, List.of(f), extensions(g));
    others.set(g - 1, m);
    return m;
  }

  /** Stops group {@code g}'s master (g >= 1). */
  void stopGroup(int g) {
    Master m = others.get(g - 1);
    if (m != null) {
      m.close();
      others.set(g - 1, null);
    }
  }

  Master masterOf(int g) {
    return g == 0 ? master : others.get(g - 1);
  }

  int groups() {
    return others.size() + 1;
  }

  /** The cluster URI naming groups 0 to {@code n - 1}. */
  String uri(int n) {
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
  io.ferrite.kernel.client.FerriteClient client(int n) {
    io.ferrite.kernel.client.FerriteClient c =
        io.ferrite.kernel.client.Ferrite.connect(
            uri(n),
            io.ferrite.kernel.client.ClientOptions.builder(
                    credentials.as(io.ferrite.fabric.Role.CLIENT))
                .fabric("local")
                .fabrics(fabrics())
                .build());
    return closeLater(c);
  }

  /** A CLIENT-role client of group {@code g} alone (a URI naming its master only). */
  io.ferrite.kernel.client.FerriteClient groupClient(int g) {
    String address = g == 0 ? super.masterAddress() : others.get(g - 1).addresses().get("local");
    return closeLater(
        io.ferrite.kernel.client.Ferrite.connect(
            address,
            io.ferrite.kernel.client.ClientOptions.builder(
                    credentials.as(io.ferrite.fabric.Role.CLIENT))
                .fabric("local")
                .fabrics(fabrics())
                .build()));
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
