package io.ferrite.bench;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;

/**
 * Finds the jar of a bench program that runs as a child JVM with a class path of its own (Spark
 * brings its own Netty and Scala, which must not meet Ferrite's in one JVM): the GraphX peer of
 * {@code bench graph --vs graphx}, the Spark jobs of {@code bench spark}. Each is a module whose
 * {@code target/lib/} holds its jar (its manifest names the dependencies beside it).
 *
 * <p>Where: the jar named by an environment variable if set, else the checkout the calling code
 * runs from: {@code bin/ferrite} runs {@code <root>/ferrite-cli/target/lib/*.jar} and tests run
 * {@code <root>/<module>/target/classes}, so {@code <root>} is the nearest ancestor of the caller's
 * jar or directory that holds the module's directory.
 */
public final class PeerJars {
  private PeerJars() {}

  /**
   * The jar of {@code module} ({@code <root>/<module>/target/lib/<module>-*.jar}) or of {@code
   * $env}.
   *
   * @param what the program, for the error ("the GraphX peer")
   * @param caller a class of the calling code: where the checkout is looked for
   * @throws FerriteException NOT_FOUND saying how to build it when it is not there
   */
  public static Path find(String module, String env, String what, Class<?> caller) {
    String named = System.getenv(env);
    if (named != null && !named.isEmpty()) {
      Path jar = Path.of(named);
      if (!Files.isRegularFile(jar)) {
        throw new FerriteException(
            ErrorCode.NOT_FOUND,
            env + "=" + named + ": no such file (expected: " + what + "'s jar)");
      }
      return jar;
    }
    Path root = checkoutRoot(codeLocation(caller), module);
    Path lib = root == null ? null : root.resolve(module).resolve("target").resolve("lib");
    Path jar = lib == null ? null : jarIn(lib, module);
    if (jar == null) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          what
              + " is not built"
              + (lib == null ? "" : " (no " + lib + "/" + module + "-*.jar)")
              + ": run 'mvn -B -q -pl "
              + module
              + " -am package -DskipTests' in the checkout, or set "
              + env
              + " to its jar");
    }
    return jar;
  }

  /** The nearest ancestor of {@code from} (inclusive) that has a {@code module/} directory. */
  public static Path checkoutRoot(Path from, String module) {
    for (Path p = from; p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve(module))) {
        return p;
      }
    }
    return null;
  }

  /** {@code lib/<module>-*.jar}, or null. */
  public static Path jarIn(Path lib, String module) {
    if (!Files.isDirectory(lib)) {
      return null;
    }
    try (DirectoryStream<Path> s = Files.newDirectoryStream(lib, module + "-*.jar")) {
      for (Path p : s) {
        return p;
      }
    } catch (IOException e) {
      return null; // not readable: reported as not built
    }
    return null;
  }

  private static Path codeLocation(Class<?> caller) {
    CodeSource cs = caller.getProtectionDomain().getCodeSource();
    if (cs == null || cs.getLocation() == null) {
      return Path.of("").toAbsolutePath();
    }
    try {
      return Path.of(cs.getLocation().toURI()).toAbsolutePath();
    } catch (URISyntaxException | IllegalArgumentException e) {
      return Path.of("").toAbsolutePath();
    }
  }
}
