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
      ClusterStatus st = c.status();
      PrintWriter out = spec.commandLine().getOut();
      out.println(json ? st.toJson() : st.format().stripTrailing());
      out.flush();
    } finally {
      fabrics.close();
    }
    return 0;
  }
}
