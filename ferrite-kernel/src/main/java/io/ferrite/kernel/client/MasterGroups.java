package io.ferrite.kernel.client;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A client's view of a cluster's master groups (docs/RESILIENCE.md, "Master groups"): one {@link
 * FerriteClient} per group, group 0's being the one the application opened and the others opened on
 * first use (a session per group, each renewed on its own), and which group owns a top-level name.
 *
 * <p>Placements come from group 0's {@link PlacementProtocol placement directory} and are kept
 * forever: a placement never changes once made, so a kept one is never stale and needs no
 * invalidation. A name not placed yet is not kept (it may be placed by another client any time). So
 * a client asks group 0 once per top-level name it uses, then never again; a cluster of one group
 * never asks at all.
 *
 * <p>Thread-safe. Closed by the client that made it; closes the clients it opened, never group 0's.
 */
public final class MasterGroups implements AutoCloseable {
  private final FerriteClient first;
  private final List<List<String>> addresses;
  private final ClientOptions options;

  /** Group g's client once opened; published by the array's volatile set, read without a lock. */
  private final java.util.concurrent.atomic.AtomicReferenceArray<FerriteClient> clients;

  private final Map<String, Integer> placed = new ConcurrentHashMap<>();
  private final Object opening = new Object();

  /** Guarded by {@link #opening}. */
  private boolean closed;

  /** One group: {@code only}. */
  MasterGroups(FerriteClient only) {
    this(only, List.of(List.of()), null);
  }

  MasterGroups(FerriteClient first, List<List<String>> addresses, ClientOptions options) {
    this.first = first;
    this.addresses = List.copyOf(addresses);
    this.options = options;
    this.clients = new java.util.concurrent.atomic.AtomicReferenceArray<>(addresses.size());
    this.clients.set(0, first);
  }

  /** How many groups this client knows (its URI names). */
  public int count() {
    return clients.length();
  }

  /** The masters' addresses of {@code group} (empty for a client of one group). */
  public List<String> addresses(int group) {
    return addresses.get(check(group));
  }

  /**
   * The client of {@code group}, opened (with this client's options: a session of its own) on first
   * use; group 0's is the client the application opened.
   *
   * @throws FerriteException UNAVAILABLE if that group's master does not answer
   */
  public FerriteClient client(int group) {
    check(group);
    FerriteClient c = clients.get(group);
    if (c != null) {
      return c;
    }
    synchronized (opening) {
      if (closed) {
        throw new FerriteException(ErrorCode.UNAVAILABLE, "client is closed");
      }
      c = clients.get(group);
      if (c == null) {
        // Under the lock: one session per group, not one per racing caller. A connect waits here
        // for the group's master (once per group per client); callers of groups already open
        // never take this lock.
        c = FerriteClient.open(String.join(",", addresses.get(group)), options);
        clients.set(group, c);
      }
      return c;
    }
  }

  /**
   * The group {@code name} of {@code kind} was placed in, or -1 if it was never placed (then it
   * exists in no group). Asks group 0 only on the first call for a placed name.
   */
  public int find(String kind, String name) {
    if (clients.length() == 1) {
      return 0;
    }
    String key = PlacementProtocol.key(kind, name);
    Integer g = placed.get(key);
    if (g != null) {
      return g;
    }
    ByteBuffer b =
        first.callMasterSync(
            PlacementProtocol.SERVICE,
            PlacementProtocol.FIND,
            new Wire.Writer().str(key).toBuffer());
    Wire.Reader r = new Wire.Reader(b, "placement");
    int group = r.i32("group");
    r.end();
    return group < 0 ? -1 : keep(key, group);
  }

  /**
   * The group of {@code name} of {@code kind}, placing it if it has none: in {@code preferred}
   * ({@code -1}: the group {@link PlacementProtocol#choose} picks among this client's groups). A
   * name placed before stays where it is, whatever {@code preferred} says.
   */
  public int place(String kind, String name, int preferred) {
    if (clients.length() == 1) {
      return 0;
    }
    String key = PlacementProtocol.key(kind, name);
    Integer g = placed.get(key);
    if (g != null) {
      return g;
    }
    ByteBuffer b =
        first.callMasterSync(
            PlacementProtocol.SERVICE,
            PlacementProtocol.PLACE,
            new Wire.Writer().str(key).i32(clients.length()).i32(preferred).toBuffer());
    Wire.Reader r = new Wire.Reader(b, "placement");
    int group = r.i32("group");
    r.end();
    return keep(key, group);
  }

  /**
   * The client of the group that holds {@code name} of {@code kind}: the one place a face picks the
   * master of a call about a top-level name. {@code place}: a create, which places a new name first
   * ({@link #place}, the rule's group); otherwise ({@link #find}) a name never placed is group 0's
   * (made before the cluster had groups, or nowhere: group 0 then answers NOT_FOUND). With one
   * group it asks nothing.
   *
   * @throws FerriteException UNAVAILABLE if group 0 (a name's first use) or the name's group does
   *     not answer
   */
  public FerriteClient clientOf(String kind, String name, boolean place) {
    if (clients.length() == 1) {
      return first;
    }
    int g = place ? place(kind, name, -1) : find(kind, name);
    return client(Math.max(g, 0));
  }

  private int keep(String key, int group) {
    if (group >= clients.length()) {
      // Placed by a client that knows more groups: this one's URI is behind the cluster's.
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "'"
              + key
              + "' lives in master group "
              + group
              + ", but this client's cluster URI names "
              + clients.length()
              + " group(s): add the cluster's new groups at the end of its URI");
    }
    placed.put(key, group);
    return group;
  }

  private int check(int group) {
    if (group < 0 || group >= clients.length()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "master group " + group + " (expected: >= 0 and < " + clients.length() + ")");
    }
    return group;
  }

  /** Closes the clients this opened (every group's but group 0's). */
  @Override
  public void close() {
    synchronized (opening) {
      closed = true;
      for (int g = 1; g < clients.length(); g++) {
        FerriteClient c = clients.get(g);
        if (c != null) {
          c.close();
        }
      }
    }
  }
}
