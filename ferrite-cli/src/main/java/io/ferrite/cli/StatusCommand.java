package io.ferrite.cli;

import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.ClusterStatus;
import java.io.PrintWriter;
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
    ClusterTarget.Resolved t = target.resolve();
    Fabrics fabrics = new Fabrics(t);
    try (FerriteClient c =
        Ferrite.connect(
            t.uri(),
            ClientOptions.builder(t.credentials())
                .config(t.config())
                .fabrics(fabrics.factory())
                .session(false)
                .clientName("ferrite-status")
                .build())) {
      PrintWriter out = spec.commandLine().getOut();
      int groups = c.groups().count();
      if (groups == 1) {
        ClusterStatus st = c.status();
        out.println(json ? st.toJson() : st.format().stripTrailing());
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
    } finally {
      fabrics.close();
    }
    return 0;
  }
}
