package io.ferrite.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Map;
import java.util.TreeMap;

/** CPU time of the tcp fabric's I/O threads, for the probes that split a cost by thread group. */
public final class IoThreadCpu {
  private IoThreadCpu() {}

  /**
   * CPU time so far (ns) of the live tcp I/O threads of this JVM, summed by group: {@code
   * server-io} and {@code client-io}. Threads that ended are not counted, so take differences over
   * intervals in which the I/O threads live.
   */
  public static Map<String, Long> byGroup() {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Map<String, Long> m = new TreeMap<>();
    for (ThreadInfo ti : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (ti == null) {
        continue;
      }
      String n = ti.getThreadName();
      String group =
          n.startsWith("ferrite-tcp-server")
              ? "server-io"
              : n.startsWith("ferrite-tcp-client") ? "client-io" : null;
      long c = group == null ? -1 : mx.getThreadCpuTime(ti.getThreadId());
      if (c > 0) {
        m.merge(group, c, Long::sum);
      }
    }
    return m;
  }
}
