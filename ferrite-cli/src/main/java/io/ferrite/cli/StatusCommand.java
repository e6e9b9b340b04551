package io.ferrite.cli;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MasterStub;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    showDefaultValues = true,
    description = {
      "Prints the cluster's members with their state (ALIVE, DEAD, UNKNOWN), capacity and use"
          + " per storage class, and region and session counts.",
      "Of a master group (a cluster URI naming several masters) it also prints each master's"
          + " role (leader, follower, candidate) and Raft term.",
      "With no flags it finds the cluster that 'ferrite local' started (~/.ferrite/cluster)."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite status",
      "  ferrite status --cluster ferrite://master.example.net:7100 \\",
      "      --secret-file /etc/ferrite/secret",
      "  FERRITE_CLUSTER=ferrite://master.example.net:7100 ferrite status --json"
    })
final class StatusCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ClusterTarget target;

  @Option(names = "--json", description = "Print JSON instead of a table.")
  boolean json;

  @Override
  public Integer call() {
    return target.withClient(
        Role.CLIENT,
        "ferrite-status",
        false,
        (c, t, fabrics) -> {
          PrintWriter out = spec.commandLine().getOut();
          int groups = c.groups().count();
          if (groups == 1) {
            ClusterStatus st = c.status();
            single(out, st, roles(t, fabrics));
          } else {
            // Several master groups: each group's own status (its members, capacity it hands out,
            // its faces' counts), in group order; a group that does not answer says so.
            StringBuilder js = new StringBuilder("{\"groups\":[");
            for (int g = 0; g < groups; g++) {
              String masters = String.join(",", c.groups().addresses(g));
              String body;
              try {
                ClusterStatus st = c.groups().client(g).status();
                body = json ? st.toJson() : st.format().stripTrailing();
              } catch (RuntimeException e) {
                body =
                    json
                        ? "{\"error\":\""
                            + e.getMessage().replace("\\", "\\\\").replace("\"", "\\\"")
                            + "\"}"
                        : "  unavailable: " + e.getMessage();
              }
              if (json) {
                js.append(g == 0 ? "" : ",")
                    .append("{\"group\":")
                    .append(g)
                    .append(",\"masters\":\"")
                    .append(masters)
                    .append("\",\"status\":")
                    .append(body)
                    .append('}');
              } else {
                out.println("master group " + g + " (" + masters + ")");
                out.println(body);
              }
            }
            if (json) {
              out.println(js.append("]}"));
            }
          }
          out.flush();
          return 0;
        });
  }

  /** One group's status, with its masters' roles when it is a Raft group. */
  private void single(PrintWriter out, ClusterStatus st, List<String[]> roles) {
    if (json) {
      String j = st.toJson();
      if (!roles.isEmpty()) {
        StringBuilder b = new StringBuilder(",\"masters\":[");
        for (int i = 0; i < roles.size(); i++) {
          String[] r = roles.get(i);
          b.append(i == 0 ? "" : ",")
              .append("{\"address\":\"")
              .append(r[0])
              .append("\",\"role\":\"")
              .append(r[1])
              .append("\",\"term\":")
              .append(r[2])
              .append('}');
        }
        j = j.substring(0, j.lastIndexOf('}')) + b.append("]}");
      }
      out.println(j);
    } else {
      out.println(st.format().stripTrailing());
      if (!roles.isEmpty()) {
        out.println("masters:");
        for (String[] r : roles) {
          out.printf(java.util.Locale.ROOT, "  %-24s %-9s term %s%n", r[0], r[1], r[2]);
        }
      }
    }
  }

  /**
   * Each master's address, role and term (MASTER_INFO) when the URI names a group; empty for one
   * master. A master that does not answer shows as "down".
   */
  private static List<String[]> roles(ClusterTarget.Resolved t, Fabrics fabrics) {
    List<String> addresses = Ferrite.masterAddresses(t.uri());
    List<String[]> out = new ArrayList<>();
    if (addresses.size() < 2) {
      return out;
    }
    java.util.Map<String, io.ferrite.fabric.Fabric> byScheme = new java.util.HashMap<>();
    for (String a : addresses) {
      String scheme = a.substring(0, a.indexOf("://"));
      Duration d = Duration.ofSeconds(2);
      io.ferrite.fabric.Fabric f =
          byScheme.computeIfAbsent(scheme, n -> fabrics.open(List.of(n)).get(0));
      try (FabricConnection conn = f.connect(a, new ConnectOptions(t.credentials(), d, d))) {
        MasterStub.MasterInfo info = new MasterStub(conn, d).masterInfo();
        out.add(new String[] {a, info.roleName(), String.valueOf(info.term())});
      } catch (FerriteException e) {
        out.add(new String[] {a, "down", "-"});
      }
    }
    return out;
  }
}
