package io.ferrite.kernel.proto;

import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@code ferrite status} prints: every member with its state and its capacity and use per
 * storage class, plus cluster totals.
 *
 * @param clusterId the cluster's id
 * @param blockSize bytes per block
 * @param members one entry per known memory server
 * @param regions number of regions in the directory
 * @param sessions number of open client sessions
 */
public record ClusterStatus(
    String clusterId,
    long blockSize,
    List<Member> members,
    int regions,
    int sessions,
    Map<String, Map<String, Long>> lost) {

  /**
   * @param lost per face (its name, sorted), what it holds that was lost: named counts (e.g.
   *     allocations, bytes; sorted by name), only for faces that lost something
   */
  public ClusterStatus {
    members = List.copyOf(members);
    Map<String, Map<String, Long>> l = new TreeMap<>();
    lost.forEach((f, c) -> l.put(f, Collections.unmodifiableMap(new TreeMap<>(c))));
    lost = Collections.unmodifiableMap(l);
  }

  /**
   * The key of a face's {@code lost} counts that says how many of its objects miss copies but lost
   * nothing (a replicated file or shard being copied again): printed apart, not as lost.
   */
  public static final String UNDER_REPLICATED = "under-replicated";

  /** A status with nothing lost. */
  public ClusterStatus(
      String clusterId, long blockSize, List<Member> members, int regions, int sessions) {
    this(clusterId, blockSize, members, regions, sessions, Map.of());
  }

  /**
   * Capacity and use of one storage class on one server: its block-pool regions (capacity) and
   * their blocks in use (used), plus its service regions (kv shards, ...), which count as both: a
   * service region takes its space from the server's capacity.
   *
   * @param serviceBytes the part of {@code usedBytes} held by service regions, per face (service
   *     name), sorted by name; the rest is blocks in use ({@link #blockBytes})
   */
  public record ClassUsage(
      String storageClass, long capacityBytes, long usedBytes, Map<String, Long> serviceBytes) {
    public ClassUsage {
      serviceBytes = Collections.unmodifiableMap(new TreeMap<>(serviceBytes));
    }

    /** A class with no service regions. */
    public ClassUsage(String storageClass, long capacityBytes, long usedBytes) {
      this(storageClass, capacityBytes, usedBytes, Map.of());
    }

    /** Bytes of allocated blocks: the use that is not service regions'. */
    public long blockBytes() {
      long n = usedBytes;
      for (long b : serviceBytes.values()) {
        n -= b;
      }
      return n;
    }
  }

  /** One server's line of the report. */
  public record Member(MemberInfo info, int regions, List<ClassUsage> usage) {
    public Member {
      usage = List.copyOf(usage);
    }
  }

  /**
   * Capacity and use per storage class summed over the members in {@code state}, or all if null.
   */
  public Map<String, long[]> totals(ServerState state) {
    Map<String, long[]> t = new TreeMap<>();
    for (Member m : members) {
      if (state != null && m.info().state() != state) {
        continue;
      }
      for (ClassUsage u : m.usage()) {
        long[] v = t.computeIfAbsent(u.storageClass(), k -> new long[2]);
        v[0] += u.capacityBytes();
        v[1] += u.usedBytes();
      }
    }
    return t;
  }

  /** The member with {@code serverId}, or null. */
  public Member member(int serverId) {
    for (Member m : members) {
      if (m.info().serverId() == serverId) {
        return m;
      }
    }
    return null;
  }

  /** A human-readable table. */
  public String format() {
    StringBuilder sb = new StringBuilder();
    sb.append("cluster ")
        .append(clusterId)
        .append(": ")
        .append(members.size())
        .append(" server(s), ")
        .append(regions)
        .append(" region(s), ")
        .append(sessions)
        .append(" session(s), block size ")
        .append(Sizes.format(blockSize))
        .append('\n');
    for (Member m : members) {
      MemberInfo i = m.info();
      sb.append(
          String.format(
              Locale.ROOT, "  server %-3d %-8s %-12s", i.serverId(), i.state(), i.name()));
      for (ClassUsage u : m.usage()) {
        sb.append(
            String.format(
                Locale.ROOT,
                "  %s %s/%s used",
                u.storageClass(),
                Sizes.format(u.usedBytes()),
                Sizes.format(u.capacityBytes())));
        if (!u.serviceBytes().isEmpty()) {
          // Where the use is: blocks, then each face's service regions (kv shards, ...).
          sb.append(": blocks ").append(Sizes.format(u.blockBytes()));
          u.serviceBytes()
              .forEach((f, b) -> sb.append(", ").append(f).append(' ').append(Sizes.format(b)));
        }
      }
      sb.append("  regions ").append(m.regions());
      sb.append("  ").append(new TreeMap<>(i.addresses()).values()).append('\n');
    }
    for (Map.Entry<String, long[]> e : totals(ServerState.ALIVE).entrySet()) {
      sb.append(
          String.format(
              Locale.ROOT,
              "  total %-5s %s used of %s on live servers%n",
              e.getKey(),
              Sizes.format(e.getValue()[1]),
              Sizes.format(e.getValue()[0])));
    }
    // Lost memory, declared by the kernel: what each face held there (it answers DATA_LOST).
    lost.forEach(
        (face, counts) -> {
          Long under = counts.get(UNDER_REPLICATED);
          if (under != null) {
            // Not lost: every piece still has a copy; the face is making the missing ones again.
            sb.append("  under-replicated  ")
                .append(face)
                .append(": ")
                .append(under)
                .append(" (copies being made again; reads work)\n");
            if (counts.size() == 1) {
              return;
            }
          }
          sb.append("  lost  ").append(face).append(": ");
          int n = 0;
          for (Map.Entry<String, Long> c : counts.entrySet()) {
            if (!c.getKey().equals("bytes") && !c.getKey().equals(UNDER_REPLICATED)) {
              sb.append(n++ > 0 ? ", " : "").append(c.getValue()).append(' ').append(c.getKey());
            }
          }
          Long bytes = counts.get("bytes"); // the size last: "2 allocations, 8 MiB"
          if (bytes != null) {
            sb.append(n > 0 ? ", " : "").append(Sizes.format(bytes));
          }
          sb.append(" (reads answer DATA_LOST; delete and write again)\n");
        });
    return sb.toString();
  }

  /** The report as JSON (strings escaped by {@link Json}). */
  public String toJson() {
    StringBuilder sb = new StringBuilder();
    sb.append("{\"cluster\":")
        .append(Json.quote(clusterId))
        .append(",\"blockSize\":")
        .append(blockSize)
        .append(",\"regions\":")
        .append(regions)
        .append(",\"sessions\":")
        .append(sessions)
        .append(",\"members\":[");
    for (int k = 0; k < members.size(); k++) {
      Member m = members.get(k);
      MemberInfo i = m.info();
      if (k > 0) {
        sb.append(',');
      }
      sb.append("{\"id\":")
          .append(i.serverId())
          .append(",\"name\":")
          .append(Json.quote(i.name()))
          .append(",\"state\":")
          .append(Json.quote(i.state().name()))
          .append(",\"host\":")
          .append(Json.quote(i.hostId()))
          .append(",\"regions\":")
          .append(m.regions())
          .append(",\"addresses\":{");
      int a = 0;
      for (Map.Entry<String, String> e : new TreeMap<>(i.addresses()).entrySet()) {
        sb.append(a++ > 0 ? "," : "")
            .append(Json.quote(e.getKey()))
            .append(':')
            .append(Json.quote(e.getValue()));
      }
      sb.append("},\"classes\":{");
      int c = 0;
      for (ClassUsage u : m.usage()) {
        sb.append(c++ > 0 ? "," : "")
            .append(Json.quote(u.storageClass()))
            .append(":{\"capacity\":")
            .append(u.capacityBytes())
            .append(",\"used\":")
            .append(u.usedBytes())
            .append(",\"blocks\":")
            .append(u.blockBytes())
            .append(",\"services\":{");
        int f = 0;
        for (Map.Entry<String, Long> e : u.serviceBytes().entrySet()) {
          sb.append(f++ > 0 ? "," : "")
              .append(Json.quote(e.getKey()))
              .append(':')
              .append(e.getValue());
        }
        sb.append("}}");
      }
      sb.append("}}");
    }
    sb.append("],\"lost\":{");
    int f = 0;
    for (Map.Entry<String, Map<String, Long>> e : lost.entrySet()) {
      sb.append(f++ > 0 ? "," : "").append(Json.quote(e.getKey())).append(":{");
      int k = 0;
      for (Map.Entry<String, Long> c : e.getValue().entrySet()) {
        sb.append(k++ > 0 ? "," : "")
            .append(Json.quote(c.getKey()))
            .append(':')
            .append(c.getValue());
      }
      sb.append('}');
    }
    return sb.append("}}").toString();
  }
}
