package io.ferrite.hadoop;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.Nodes;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.BlockLocation;

/**
 * Turns a node's block refs into Hadoop {@link BlockLocation}s: block {@code i} of a node holds its
 * bytes {@code [i * blockSize, (i + 1) * blockSize)} and lives on the memory server named in its
 * ref (each copy's server, for a replicated File: one location naming them all); the server's host
 * and {@code host:port} come from its tcp address in the cluster's membership (cached, fetched
 * again for a server it has not seen).
 */
final class BlockLocator {
  /** A server as Hadoop names it. */
  record Host(String host, String name) {}

  private final Nodes nodes;
  private final long blockSize;
  private final Host master;
  private final Map<Integer, Host> servers = new ConcurrentHashMap<>();

  /**
   * @param master the master, {@code ferrite://host:port}: where a small KeyValue's value lives
   */
  BlockLocator(Nodes nodes, String master) {
    this.nodes = nodes;
    this.blockSize = nodes.blockSize();
    URI u = URI.create(master);
    this.master = new Host(u.getHost(), u.getHost() + ":" + u.getPort());
  }

  /** Locations of the bytes {@code [start, start + len)} of {@code n}; {@code start < size}. */
  BlockLocation[] locate(NodeInfo n, long start, long len) {
    long end = start + Math.min(len, n.size() - start); // exclusive; no overflow
    if (n.inline() != null) {
      return new BlockLocation[] {location(master, 0, n.size())};
    }
    int first = (int) (start / blockSize);
    int last = (int) ((Math.max(end, start + 1) - 1) / blockSize); // a 0-byte range: its block
    List<BlockRef> refs = nodes.blocks(n, first, last - first + 1);
    int r = n.replicas(); // refs holds r copies per block, block by block
    BlockLocation[] out = new BlockLocation[refs.size() / r];
    for (int i = 0; i < out.length; i++) {
      long offset = (first + i) * blockSize;
      Host[] hosts = new Host[r];
      for (int k = 0; k < r; k++) {
        hosts[k] = host(refs.get(i * r + k).serverId());
      }
      out[i] = location(hosts, offset, Math.min(blockSize, n.size() - offset));
    }
    return out;
  }

  private static BlockLocation location(Host h, long offset, long length) {
    return location(new Host[] {h}, offset, length);
  }

  /** One location naming every copy's server. */
  private static BlockLocation location(Host[] hs, long offset, long length) {
    String[] names = new String[hs.length];
    String[] hosts = new String[hs.length];
    for (int k = 0; k < hs.length; k++) {
      names[k] = hs[k].name();
      hosts[k] = hs[k].host();
    }
    return new BlockLocation(names, hosts, offset, length);
  }

  private Host host(int serverId) {
    Host h = servers.get(serverId);
    if (h == null) {
      for (MemberInfo m : nodes.client().members()) {
        servers.put(m.serverId(), hostOf(m));
      }
      h = servers.get(serverId);
    }
    if (h == null) {
      h = new Host("unknown-server-" + serverId, "unknown-server-" + serverId + ":0");
    }
    return h;
  }

  /** From the tcp address ({@code tcp://host:port}), else the host part of the host identity. */
  static Host hostOf(MemberInfo m) {
    String tcp = m.addresses().get("tcp");
    if (tcp != null) {
      URI u = URI.create(tcp);
      if (u.getHost() != null) {
        return new Host(u.getHost(), u.getHost() + ":" + u.getPort());
      }
    }
    String id = m.hostId();
    int slash = id.indexOf('/');
    String host = slash < 0 ? id : id.substring(0, slash);
    return new Host(host, host + ":0");
  }
}
