package io.ferrite.clientruntime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * What the shaded jar holds: Ferrite's classes and the relocated libraries under {@code
 * io/ferrite/} (and the shuffle manager's one class in Spark's package, see {@link #SPARK_BYPASS}),
 * and nothing else that a host could also have. Outside {@code io/ferrite/} only {@code META-INF/}
 * resources are allowed: the manifest, licence and notice files, Micrometer's version properties,
 * the service files (whose names and contents must be relocated or be the host's interfaces:
 * Hadoop's FileSystem) and the renamed Netty native library.
 */
class ShadedJarContentsTest {
  private static final String SHADED = "io/ferrite/shaded/";

  /** Packages that must never appear unrelocated in a class file of the jar. */
  private static final List<String> RELOCATED =
      List.of(
          "io/netty/",
          "org/agrona/",
          "io/micrometer/",
          "io/prometheus/",
          "org/HdrHistogram/",
          "net/openhft/",
          "picocli/");

  /**
   * The one class outside {@code io/ferrite/}: ferrite-spark's door to a package-private
   * constructor of Spark's ({@code org.apache.spark.shuffle.sort.FerriteBypass}), and its
   * directories. A name no Spark has, so it cannot clash with the host's.
   */
  private static final String SPARK_BYPASS = "org/apache/spark/shuffle/sort/FerriteBypass.class";

  private static final List<String> SPARK_ENTRIES =
      List.of(
          "org/",
          "org/apache/",
          "org/apache/spark/",
          "org/apache/spark/shuffle/",
          "org/apache/spark/shuffle/sort/",
          SPARK_BYPASS);

  @Test
  void everyClassIsUnderIoFerrite() throws IOException {
    List<String> leaked = new ArrayList<>();
    try (JarFile jar = new JarFile(ShadedClientTest.shadedJar().toFile())) {
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        if (name.startsWith("io/ferrite/") || name.equals("io/") || SPARK_ENTRIES.contains(name)) {
          continue;
        }
        if (!name.startsWith("META-INF/") || name.endsWith(".class")) {
          leaked.add(name);
        }
      }
      assertTrue(leaked.isEmpty(), "entries outside io/ferrite/ and META-INF/: " + leaked);
      assertTrue(jar.getEntry("io/ferrite/hadoop/FerriteFileSystem.class") != null);
      assertTrue(jar.getEntry("io/ferrite/spark/FerriteShuffleManager.class") != null);
      assertTrue(jar.getEntry(SPARK_BYPASS) != null);
      assertTrue(jar.getEntry(SHADED + "io/netty/channel/Channel.class") != null);
      assertTrue(jar.getEntry(SHADED + "org/agrona/concurrent/UnsafeBuffer.class") != null);
      // The master group's Raft engine is server-only: not in a client.
      assertTrue(jar.getEntry("org/apache/ratis/server/RaftServer.class") == null);
    }
  }

  @Test
  void noClassReferencesAnUnrelocatedLibrary() throws IOException {
    List<String> bad = new ArrayList<>();
    try (JarFile jar = new JarFile(ShadedClientTest.shadedJar().toFile())) {
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        JarEntry entry = e.nextElement();
        if (!entry.getName().endsWith(".class")) {
          continue;
        }
        // Internal names in the constant pool are modified UTF-8, ASCII for these packages:
        // a reference is unrelocated unless "io/ferrite/shaded/" comes right before it. A '.' or
        // '/' before it is a longer name or a URL ("docs.micrometer.io/micrometer/..."): skipped.
        String text;
        try (InputStream in = jar.getInputStream(entry)) {
          text = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        }
        for (String pkg : RELOCATED) {
          for (int at = text.indexOf(pkg); at >= 0; at = text.indexOf(pkg, at + 1)) {
            char before = at == 0 ? ' ' : text.charAt(at - 1);
            if (before != '.' && before != '/') {
              bad.add(entry.getName() + " -> " + pkg);
              break;
            }
          }
        }
      }
    }
    assertTrue(bad.isEmpty(), "unrelocated references: " + bad);
  }

  /**
   * Ratis is left out of the jar (the pom excludes it): only the master group's classes, which a
   * client never loads, may name it.
   */
  @Test
  void onlyTheMasterGroupNamesRatis() throws IOException {
    List<String> naming = new ArrayList<>();
    try (JarFile jar = new JarFile(ShadedClientTest.shadedJar().toFile())) {
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        JarEntry entry = e.nextElement();
        if (entry.getName().endsWith(".class")) {
          try (InputStream in = jar.getInputStream(entry)) {
            String text = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
            if (text.contains("org/apache/ratis/")) {
              naming.add(entry.getName());
            }
          }
        }
      }
    }
    assertFalse(naming.isEmpty(), "MasterGroup names Ratis: the scan finds nothing?");
    for (String n : naming) {
      assertTrue(n.startsWith("io/ferrite/kernel/master/"), n + " names Ratis");
    }
  }

  @Test
  void hadoopFindsTheFileSystemAndServicesAreRelocated() throws IOException {
    try (JarFile jar = new JarFile(ShadedClientTest.shadedJar().toFile())) {
      assertEquals(
          "io.ferrite.hadoop.FerriteFileSystem",
          read(jar, "META-INF/services/org.apache.hadoop.fs.FileSystem").strip());
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        if (name.startsWith("META-INF/services/") && !name.endsWith("/")) {
          String service = name.substring("META-INF/services/".length());
          assertTrue(
              service.startsWith("io.ferrite.") || service.startsWith("org.apache.hadoop."),
              "a service of an unrelocated interface: " + name);
          for (String impl : read(jar, name).strip().split("\\s+")) {
            assertTrue(impl.startsWith("io.ferrite."), name + " names " + impl);
          }
        }
      }
    }
  }

  @Test
  void nettysNativeLibraryIsRenamedForItsRelocatedPackage() throws IOException {
    List<String> natives = new ArrayList<>();
    try (JarFile jar = new JarFile(ShadedClientTest.shadedJar().toFile())) {
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        if (name.startsWith("META-INF/native/") && !name.endsWith("/")) {
          natives.add(name);
        }
      }
    }
    // NativeLibraryLoader of io.ferrite.shaded.io.netty loads "io_ferrite_shaded_" + name.
    assertFalse(natives.isEmpty(), "the epoll transport's library");
    for (String n : natives) {
      assertTrue(n.startsWith("META-INF/native/libio_ferrite_shaded_netty_"), n);
    }
  }

  private static String read(JarFile jar, String name) throws IOException {
    try (InputStream in = jar.getInputStream(jar.getEntry(name))) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
