package io.ferrite.kernel.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.tcp.TcpFabric;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * The address a memory server announces for an endpoint. A tcp endpoint bound to a wildcard ({@code
 * server.host = 0.0.0.0} or {@code ::}) cannot announce what it bound — {@code tcp://0.0.0.0:port}
 * sends every client to its own host — so it announces the address this host reaches the master
 * from instead: the master's network is the one the cluster shares, and the kernel picks that
 * source address by its routing table (a connected UDP socket asks the kernel which route and
 * source it would use; nothing is sent). Any other endpoint announces what it bound.
 */
final class Advertised {
  private Advertised() {}

  /**
   * {@code bound} ({@code scheme://host:port}), with a wildcard tcp host replaced by this host's
   * address toward {@code masterAddress}.
   */
  static String address(String bound, String masterAddress) {
    if (!bound.startsWith("tcp://")) {
      return bound;
    }
    InetSocketAddress a = TcpFabric.parse(bound, "tcp");
    if (a.getAddress() == null || !a.getAddress().isAnyLocalAddress()) {
      return bound;
    }
    return TcpFabric.address(new InetSocketAddress(toward(masterAddress), a.getPort()));
  }

  /**
   * The local address the kernel would send from to reach {@code masterAddress}'s host. With a
   * master group ({@code tcp://a:p,tcp://b:p,...}, groups separated by {@code ;}) the first master
   * stands for all: the masters share the cluster's network, and the one leading now may not be the
   * one leading when a client reads the announcement.
   */
  static InetAddress toward(String masterAddress) {
    InetSocketAddress master;
    try {
      master = TcpFabric.parse(masterAddress.split("[,;]", 2)[0].trim(), "tcp");
    } catch (FerriteException e) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "server.host is a wildcard and the master ("
              + masterAddress
              + ") is not on tcp: set server.host to the address to announce");
    }
    try (DatagramSocket probe = new DatagramSocket()) {
      probe.connect(master);
      InetAddress local = probe.getLocalAddress();
      if (local == null || local.isAnyLocalAddress()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "no route to the master at "
                + masterAddress
                + " to pick an address to announce: set server.host to it");
      }
      return local;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot pick the address to announce", e);
    }
  }
}
