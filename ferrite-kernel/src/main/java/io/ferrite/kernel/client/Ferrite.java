package io.ferrite.kernel.client;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/** The entry point of the client core. */
public final class Ferrite {
  private Ferrite() {}

  /**
   * Connects to the cluster whose master is at {@code uri}: {@code ferrite://host:port} (the
   * master's tcp endpoint) or a fabric address such as {@code tcp://host:port} or {@code
   * local://node-0-1}, or a master group ({@code ferrite://h1:p1,h2:p2,h3:p3}: the client connects
   * to the leader and follows it, see {@link #masterAddresses}). Opens a session unless the options
   * say not to.
   *
   * @throws FerriteException UNAVAILABLE if the master does not answer, AUTH_FAILED if the
   *     credentials are wrong, INVALID_ARGUMENT for a malformed URI
   */
  public static FerriteClient connect(String uri, ClientOptions options) {
    java.util.List<java.util.List<String>> groups = groups(uri);
    FerriteClient c = FerriteClient.open(String.join(",", groups.get(0)), options);
    if (groups.size() > 1) {
      c.attachGroups(groups);
    }
    return c;
  }

  /** The separator of master groups in a cluster URI: {@code ferrite://a:7100;b:7200}. */
  public static final String GROUP_SEPARATOR = ";";

  /**
   * Maps a cluster URI to its master groups, each the list of its masters' fabric addresses (as
   * {@link #masterAddresses} gives them), in the URI's order: {@code
   * ferrite://a:7100,b:7101;c:7200} names two groups, the first of two masters (a Raft group), the
   * second of one. A group's index is its place in the URI, so a cluster's URI only ever grows at
   * its end (docs/RESILIENCE.md, "Master groups"). A URI without {@code ;} is one group.
   *
   * @throws FerriteException INVALID_ARGUMENT for a malformed URI or an empty group
   */
  public static java.util.List<java.util.List<String>> groups(String uri) {
    java.util.List<java.util.List<String>> out = new java.util.ArrayList<>();
    String scheme = uri.startsWith("ferrite://") ? "ferrite://" : "";
    String rest = uri.substring(scheme.length());
    for (String part : rest.split(GROUP_SEPARATOR, -1)) {
      if (part.isBlank()) {
        throw malformed(uri);
      }
      out.add(masterAddresses(scheme + part.strip()));
    }
    return java.util.List.copyOf(out);
  }

  /**
   * Maps a cluster URI to what a memory server needs to reach every master of every group: each
   * group's addresses joined by {@code ,}, the groups by {@code ;} ({@code
   * tcp://a:7100,tcp://b:7101;tcp://c:7200}).
   */
  public static String clusterAddress(String uri) {
    java.util.List<String> parts = new java.util.ArrayList<>();
    for (java.util.List<String> g : groups(uri)) {
      parts.add(String.join(",", g));
    }
    return String.join(GROUP_SEPARATOR, parts);
  }

  /** Maps a cluster URI to the (first) master's fabric address. */
  public static String masterAddress(String uri) {
    return masterAddresses(uri).get(0);
  }

  /**
   * Maps a cluster URI to every master's fabric address, in the URI's order: {@code
   * ferrite://h1:p1,h2:p2,h3:p3} names the masters of one Raft group (any of them answers, a
   * follower with {@link ErrorCode#NOT_LEADER} naming the leader); a port left out is 7100. A
   * fabric address ({@code tcp://}, {@code shm://}, {@code local://}) names one master, or several
   * separated by commas. Of a URI naming several groups ({@link #groups}), the first group's.
   *
   * @throws FerriteException INVALID_ARGUMENT for a malformed URI
   */
  public static java.util.List<String> masterAddresses(String uri) {
    if (uri.contains(GROUP_SEPARATOR)) {
      return groups(uri).get(0);
    }
    java.util.List<String> out = new java.util.ArrayList<>();
    if (uri.startsWith("ferrite://")) {
      String hosts = uri.substring("ferrite://".length());
      if (hosts.endsWith("/")) {
        hosts = hosts.substring(0, hosts.length() - 1);
      }
      for (String hostPort : hosts.split(",", -1)) {
        hostPort = hostPort.strip();
        if (hostPort.isEmpty() || hostPort.contains("/")) {
          throw malformed(uri);
        }
        out.add("tcp://" + (hostPort.contains(":") ? hostPort : hostPort + ":7100"));
      }
      return java.util.List.copyOf(out);
    }
    for (String address : uri.split(",", -1)) {
      address = address.strip();
      if (!(address.startsWith("tcp://")
          || address.startsWith("shm://")
          || address.startsWith("local://"))) {
        throw malformed(uri);
      }
      out.add(address);
    }
    return java.util.List.copyOf(out);
  }

  private static FerriteException malformed(String uri) {
    return new FerriteException(
        ErrorCode.INVALID_ARGUMENT,
        "cluster URI: '"
            + uri
            + "' (expected: ferrite://host:port[,host:port...][;host:port...], tcp://, shm:// or local://)");
  }
}
