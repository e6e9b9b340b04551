package io.ferrite.cli;

import java.io.PrintWriter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * What every subcommand of a face's command ({@code kv}, {@code tree}) shares: the cluster it talks
 * to, {@code --hex}, where it prints, and how a get's or a delete's answer is printed and becomes
 * the exit code, so that both faces answer alike.
 */
abstract class FaceCommand {
  @Spec CommandSpec spec;
  @Mixin ClusterTarget target;
  @Mixin KeyCodec codec;

  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  /** A get's answer: the value on stdout, exit code 0; or "(not found)" on stderr, exit code 1. */
  int printValue(byte[] value) {
    if (value == null) {
      spec.commandLine().getErr().println("(not found)");
      spec.commandLine().getErr().flush();
      return 1;
    }
    out().println(codec.show(value));
    out().flush();
    return 0;
  }

  /** A delete's answer: "deleted", exit code 0; or "(not found)", exit code 1, both on stdout. */
  int printDeleted(boolean deleted) {
    out().println(deleted ? "deleted" : "(not found)");
    out().flush();
    return deleted ? 0 : 1;
  }
}
