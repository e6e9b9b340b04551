package io.ferrite.cli;

import io.ferrite.fabric.tcp.TlsFiles;
import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
    name = "tls",
    mixinStandardHelpOptions = true,
    description = "TLS on the tcp fabric: certificates for tls.cert, tls.key and tls.trust.",
    subcommands = {TlsCommand.Generate.class})
final class TlsCommand extends CommandGroup {
  /**
   * The pair in {@code dir} ({@code cert.pem}, {@code key.pem}), made for the loopback names if
   * either is missing; returns the certificate's path.
   */
  static Path pairIn(Path dir, PrintWriter out) throws IOException {
    Path cert = dir.resolve(TlsFiles.CERT);
    if (Files.isRegularFile(cert) && Files.isRegularFile(dir.resolve(TlsFiles.KEY))) {
      return cert;
    }
    TlsFiles.generate(dir, TlsFiles.LOOPBACK, 365);
    out.println("tls: made a self-signed certificate for 127.0.0.1 and localhost in " + dir);
    return cert;
  }

  @Command(
      name = "generate",
      mixinStandardHelpOptions = true,
      showDefaultValues = true,
      description = {
        "Makes a self-signed certificate and its key: <dir>/cert.pem (give it to servers as"
            + " tls.cert and to clients as tls.trust) and <dir>/key.pem (tls.key, mode 0600).",
        "Uses the JDK's keytool: no other tool or library."
      },
      footer = {
        "",
        "Examples:",
        "  ferrite tls generate --dir ~/.ferrite/tls",
        "  ferrite tls generate --dir certs --name ip:10.0.0.5 --name dns:mem1.example"
      })
  static final class Generate implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--dir", required = true, description = "Where to write cert.pem and key.pem.")
    Path dir;

    @Option(
        names = "--name",
        paramLabel = "SAN",
        description =
            "A name the certificate is valid for, ip:ADDRESS or dns:HOST; repeatable (default:"
                + " ip:127.0.0.1 and dns:localhost).")
    List<String> names;

    @Option(names = "--days", defaultValue = "365", description = "Validity in days.")
    int days;

    @Override
    public Integer call() throws IOException {
      List<String> san = names == null || names.isEmpty() ? TlsFiles.LOOPBACK : names;
      for (String n : san) {
        if (!n.startsWith("ip:") && !n.startsWith("dns:")) {
          throw new CommandLine.ParameterException(
              spec.commandLine(), "--name " + n + " (expected: ip:ADDRESS or dns:HOST)");
        }
      }
      Path cert = TlsFiles.generate(dir, san, days);
      PrintWriter out = spec.commandLine().getOut();
      out.println(
          "wrote " + cert.toAbsolutePath() + " and " + dir.resolve(TlsFiles.KEY).toAbsolutePath());
      out.println(
          "  servers: "
              + FerriteConfig.TLS_ENABLED
              + "=true "
              + FerriteConfig.TLS_CERT
              + "="
              + cert.toAbsolutePath()
              + " "
              + FerriteConfig.TLS_KEY
              + "="
              + dir.resolve(TlsFiles.KEY).toAbsolutePath());
      out.println(
          "  clients: "
              + FerriteConfig.TLS_ENABLED
              + "=true "
              + FerriteConfig.TLS_TRUST
              + "="
              + cert.toAbsolutePath()
              + "  (or --tls-trust)");
      return 0;
    }
  }
}
