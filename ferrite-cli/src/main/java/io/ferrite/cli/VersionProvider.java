package io.ferrite.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine;

/** {@code ferrite --version}: the Maven version, filtered into a resource at build time. */
public final class VersionProvider implements CommandLine.IVersionProvider {
  /** The project version, e.g. {@code 0.1.0-SNAPSHOT}. */
  public static String version() {
    try (InputStream in = VersionProvider.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "unknown");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read version.properties", e);
    }
  }

  @Override
  public String[] getVersion() {
    return new String[] {
      "ferrite " + version(),
      "JVM: ${java.version} (${java.vendor} ${java.vm.name} ${java.vm.version})",
      "OS: ${os.name} ${os.version} ${os.arch}"
    };
  }
}
