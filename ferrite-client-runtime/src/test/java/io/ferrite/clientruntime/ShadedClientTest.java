package io.ferrite.clientruntime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.Nodes;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A {@code ferrite://} client in a JVM whose class path holds Spark's Netty (Spark 3.5.9's 4.1.96;
 * with {@code -Pspark40}, Spark 4.0.4's 4.1.118) and Hadoop, against a real cluster in this JVM
 * (master and two memory servers on tcp, Ferrite's own Netty 4.1.118): the child ({@link
 * HadoopProbe}) reads a file this test wrote and writes one this test reads. With the shaded jar
 * after the host's jars (as Spark loads an application's jars after its own) it works; with the
 * unshaded client's jars as a Maven build mixes them with Spark's ({@link #mavenMediated}) it fails
 * with the {@code NoSuchMethodError} of issue #16, which is why the shaded jar exists. Spark itself
 * reads a {@code ferrite://} file ({@link SparkProbe}) and shuffles through Ferrite's shuffle
 * manager from the jar ({@link SparkShuffleProbe}), in {@code local[2]} and with executor JVMs.
 *
 * <p>The class paths come from the build (target/classpath, target/spark-netty).
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class ShadedClientTest {
  private static final Credentials CREDENTIALS =
      new Credentials(
          "shaded-test", "0123456789abcdef-shaded-secret".getBytes(StandardCharsets.US_ASCII));
  // Five 64 KiB blocks and a partial one: the reads and writes cross block and server edges.
  private static final int SIZE = 5 * 64 * 1024 + 1234;

  @TempDir Path dir;
  private ClusterHarness cluster;
  private Path clientSecret;
  private URI uri;

  @BeforeEach
  void startCluster() throws IOException, InterruptedException {
    cluster =
        new ClusterHarness(
            dir.resolve("data"),
            CREDENTIALS,
            true,
            Map.of(
                FerriteConfig.BLOCK_SIZE, "64k",
                FerriteConfig.REGION_SIZE, "1m",
                FerriteConfig.CAPACITY_DRAM, "8m",
                FerriteConfig.CAPACITY_DISK, "0",
                // A loaded 2-core machine must not see servers or sessions expire.
                FerriteConfig.HEARTBEAT_INTERVAL, "100ms",
                FerriteConfig.DEAD_TIMEOUT, "5s",
                FerriteConfig.SESSION_LEASE, "10s"));
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
    Path root = dir.resolve("secret");
    Files.writeString(
        root, HexFormat.of().formatHex(CREDENTIALS.secret()) + "\n", StandardCharsets.US_ASCII);
    clientSecret = Secrets.writeClientSecret(root, CREDENTIALS.secret());
    URI master = URI.create(cluster.masterAddress());
    uri = URI.create("ferrite://" + master.getHost() + ":" + master.getPort() + "/");
  }

  @AfterEach
  void stopCluster() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * tcp: the relocated Netty's NIO/epoll sockets; shm: its epoll Unix-domain sockets, which need
   * the renamed native library (there is no fallback), and the relocated Agrona's mapped rings.
   */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "shm"})
  void theShadedJarWorksBesideSparksNetty(String fabric, Random random) throws Exception {
    long seed = random.nextLong();
    writeHere("/in", seed);
    List<String> cp = new ArrayList<>(hostClassPath());
    cp.add(shadedJar().toString());
    cp.add(probeClasses());

    Result r = runProbe(cp, fabric, "/in", "/out", seed);

    assertEquals(0, r.status, "the probe failed:\n" + r.output);
    assertTrue(r.output.contains("probe ok"), r.output);
    assertTrue(
        r.output.contains("/netty-common-" + NETTY_OF.get(sparkVersion()) + ".jar"),
        "host Netty:\n" + r.output);
    assertArrayEquals(HadoopProbe.content(seed + 1, SIZE), readHere("/out"), "/out as read here");
  }

  @Test
  void theUnshadedClientFailsBesideSpark35sNetty(Random random) throws Exception {
    // Spark 4.0.4's Netty is Ferrite's own 4.1.118: nothing to mix.
    assumeTrue(sparkVersion().startsWith("3.5."), "Spark " + sparkVersion());
    long seed = random.nextLong();
    writeHere("/in", seed);
    List<String> cp = new ArrayList<>(lines("hadoop.txt"));
    cp.addAll(mavenMediated(lines("unshaded-client.txt")));
    cp.add(probeClasses());

    Result r = runProbe(cp, "tcp", "/in", "/out", seed);

    assertNotEquals(0, r.status, "the unshaded client worked:\n" + r.output);
    assertTrue(
        r.output.contains("java.lang.NoSuchMethodError")
            && r.output.contains("newFixedMpscUnpaddedQueue"),
        "expected issue #16's NoSuchMethodError:\n" + r.output);
  }

  /** What Spark's launcher passes on Java 17 (its JavaModuleOptions), as GraphXPageRank does. */
  private static final List<String> SPARK_ADD_OPENS =
      List.of(
          "java.base/java.lang",
          "java.base/java.lang.invoke",
          "java.base/java.lang.reflect",
          "java.base/java.io",
          "java.base/java.net",
          "java.base/java.nio",
          "java.base/java.util",
          "java.base/java.util.concurrent",
          "java.base/java.util.concurrent.atomic",
          "java.base/jdk.internal.ref",
          "java.base/sun.nio.ch",
          "java.base/sun.nio.cs",
          "java.base/sun.security.action",
          "java.base/sun.util.calendar");

  /**
   * Spark itself ({@code local[2]}, its Netty and its own Hadoop client first on the class path,
   * the shaded jar after) counts and sums the lines of a {@code ferrite://} text file with {@code
   * sc.textFile}.
   */
  @Test
  void sparkReadsFerriteThroughTheShadedJar(Random random) throws Exception {
    int n = 20_000 + random.nextInt(20_000);
    StringBuilder text = new StringBuilder();
    long sum = 0;
    for (int i = 0; i < n; i++) {
      long v = random.nextInt(1_000_000);
      sum += v;
      text.append(v).append('\n');
    }
    try (FileSystem fs = FileSystem.newInstance(uri, configuration());
        OutputStream out = fs.create(new org.apache.hadoop.fs.Path("/lines.txt"), false)) {
      out.write(text.toString().getBytes(StandardCharsets.US_ASCII));
    }
    List<String> cp = new ArrayList<>(sparkNetty());
    cp.addAll(lines("spark.txt"));
    cp.add(shadedJar().toString());
    cp.add(probeClasses());
    List<String> jvm = new ArrayList<>();
    for (String open : SPARK_ADD_OPENS) {
      jvm.add("--add-opens=" + open + "=ALL-UNNAMED");
    }

    Result r =
        run(
            jvm,
            cp,
            SparkProbe.class.getName(),
            List.of(
                uri.resolve("/lines.txt").toString(),
                clientSecret.toString(),
                CREDENTIALS.clusterId(),
                "tcp"),
            120);

    assertEquals(0, r.status, "Spark failed:\n" + r.output);
    assertTrue(
        r.output.contains("spark version=" + sparkVersion() + " lines=" + n + " sum=" + sum + "\n"),
        r.output);
    assertTrue(r.output.contains("spark ok"), r.output);
  }

  /**
   * Spark's shuffle through Ferrite from the shaded jar: Spark's jars with its own Netty first,
   * then the shaded jar, run {@code groupByKey}, {@code sortByKey} and {@code reduceByKey} (the
   * manager's three map writers) with {@code
   * spark.shuffle.manager=io.ferrite.spark.FerriteShuffleManager} ({@link SparkShuffleProbe}); the
   * results are compared with the same computation here, without Spark. In {@code
   * local-cluster[2,1,1024]} two executor JVMs load the manager from the shaded jar on {@code
   * spark.executor.extraClassPath}, what a {@code spark-submit} user does; {@code SPARK_HOME} is a
   * directory whose {@code jars/} links Spark's jars (the Spark of this build, its Scala version in
   * {@code SPARK_SCALA_VERSION}). After Spark stops, no node of the application is left.
   */
  @ParameterizedTest
  @ValueSource(strings = {"local[2]", "local-cluster[2,1,1024]"})
  void sparkShufflesThroughTheShadedJar(String master, Random random) throws Exception {
    long seed = random.nextLong();
    int n = 30_000 + random.nextInt(20_000);
    List<String> spark = new ArrayList<>(sparkNetty());
    spark.addAll(lines("spark.txt"));
    List<String> cp = new ArrayList<>(spark);
    cp.add(shadedJar().toString());
    cp.add(probeClasses());
    List<String> jvm = new ArrayList<>();
    for (String open : SPARK_ADD_OPENS) {
      jvm.add("--add-opens=" + open + "=ALL-UNNAMED");
    }
    URI master0 = URI.create(cluster.masterAddress());
    List<String> args =
        new ArrayList<>(
            List.of(
                master,
                "ferrite://" + master0.getHost() + ":" + master0.getPort(),
                clientSecret.toString(),
                CREDENTIALS.clusterId(),
                Long.toString(seed),
                Integer.toString(n)));
    Map<String, String> env = Map.of();
    if (master.startsWith("local-cluster")) {
      args.add(shadedJar() + File.pathSeparator + probeClasses());
      env = Map.of("SPARK_HOME", sparkHome(spark).toString(), "SPARK_SCALA_VERSION", scala());
    }

    Result r = run(jvm, cp, SparkShuffleProbe.class.getName(), args, 240, env);
    r.output
        .lines()
        .filter(l -> l.startsWith("shuffle manager:") || l.startsWith("map outputs="))
        .forEach(l -> System.out.println(master + ": " + l));

    assertEquals(0, r.status, "Spark failed:\n" + r.output);
    assertTrue(
        r.output.contains("shuffle manager: io.ferrite.spark.FerriteShuffleManager\n"), r.output);
    assertTrue(
        r.output.contains("groupByKey=" + SparkShuffleProbe.expectedGroups(seed, n) + "\n"),
        "groupByKey, seed " + seed + ":\n" + r.output);
    assertTrue(
        r.output.contains("sortByKey=" + SparkShuffleProbe.expectedSorted(seed, n) + "\n"),
        "sortByKey, seed " + seed + ":\n" + r.output);
    assertTrue(
        r.output.contains("reduceByKey=" + SparkShuffleProbe.expectedSums(seed, n) + "\n"),
        "reduceByKey, seed " + seed + ":\n" + r.output);
    // 4 map tasks for each of the three shuffles, at least (sortByKey's sample job shuffles none).
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("map outputs=(\\d+)\n").matcher(r.output);
    assertTrue(m.find(), r.output);
    assertTrue(Integer.parseInt(m.group(1)) >= 12, "map output Files in Ferrite:\n" + r.output);
    assertTrue(r.output.contains("shuffle ok"), r.output);
    Nodes nodes = new Nodes(cluster.client());
    List<String> left = new ArrayList<>();
    if (nodes.exists("/spark")) {
      nodes.list("/spark").forEach(info -> left.add(info.path()));
    }
    assertEquals(List.of(), left, "nodes left under /spark after Spark stopped");
  }

  /** A SPARK_HOME for local-cluster: {@code jars/} links Spark's jars, as a distribution has. */
  private Path sparkHome(List<String> sparkJars) throws IOException {
    Path jars = Files.createDirectories(dir.resolve("spark-home").resolve("jars"));
    for (String jar : sparkJars) {
      Path p = Path.of(jar);
      if (jar.endsWith(".jar")) {
        Files.createSymbolicLink(jars.resolve(p.getFileName()), p);
      }
    }
    return jars.getParent();
  }

  private void writeHere(String path, long seed) throws IOException {
    try (FileSystem fs = FileSystem.newInstance(uri, configuration());
        OutputStream out = fs.create(new org.apache.hadoop.fs.Path(path), false)) {
      out.write(HadoopProbe.content(seed, SIZE));
    }
  }

  private byte[] readHere(String path) throws IOException {
    try (FileSystem fs = FileSystem.newInstance(uri, configuration());
        InputStream in = fs.open(new org.apache.hadoop.fs.Path(path))) {
      return in.readAllBytes();
    }
  }

  private Configuration configuration() {
    Configuration conf = new Configuration();
    conf.set("fs.ferrite.secret.file", clientSecret.toString());
    conf.set("fs.ferrite.cluster.id", CREDENTIALS.clusterId());
    conf.set("fs.ferrite.cluster.file", dir.resolve("no-cluster-file").toString());
    conf.set("fs.ferrite.fabric", "tcp");
    return conf;
  }

  private record Result(int status, String output) {}

  private Result runProbe(List<String> classPath, String fabric, String in, String out, long seed)
      throws IOException, InterruptedException {
    return run(
        List.of(),
        classPath,
        HadoopProbe.class.getName(),
        List.of(
            uri.toString(),
            clientSecret.toString(),
            CREDENTIALS.clusterId(),
            fabric,
            in,
            out,
            Long.toString(seed),
            Integer.toString(SIZE)),
        60);
  }

  /** Runs {@code main} in a child JVM; kills it if it is still running when this returns. */
  private Result run(
      List<String> jvmArgs, List<String> classPath, String main, List<String> args, int seconds)
      throws IOException, InterruptedException {
    return run(jvmArgs, classPath, main, args, seconds, Map.of());
  }

  /**
   * Runs {@code main} in a child JVM with {@code env} added to its environment; kills it and its
   * descendants (a local-cluster's executor JVMs) if they are still running when this returns.
   */
  private Result run(
      List<String> jvmArgs,
      List<String> classPath,
      String main,
      List<String> args,
      int seconds,
      Map<String, String> env)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx512m");
    cmd.addAll(jvmArgs);
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, classPath));
    cmd.add(main);
    cmd.addAll(args);
    Path log = dir.resolve("probe.log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p = pb.redirectOutput(log.toFile()).start();
    try {
      boolean done = p.waitFor(seconds, TimeUnit.SECONDS);
      String output = Files.readString(log, StandardCharsets.UTF_8);
      assertTrue(done, main + " did not finish in " + seconds + " s; output:\n" + output);
      return new Result(p.exitValue(), output);
    } finally {
      List<ProcessHandle> descendants = p.descendants().toList();
      descendants.forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      for (ProcessHandle d : descendants) {
        d.onExit().join();
      }
    }
  }

  /** Spark's Netty jars, then Hadoop's class path: what the host JVM already holds. */
  static List<String> hostClassPath() throws IOException {
    List<String> cp = new ArrayList<>(sparkNetty());
    cp.addAll(lines("hadoop.txt"));
    return cp;
  }

  private static List<String> sparkNetty() throws IOException {
    List<String> cp = new ArrayList<>();
    try (Stream<Path> jars = Files.list(Path.of(property("ferrite.spark.netty.dir")))) {
      jars.map(Path::toString).filter(s -> s.endsWith(".jar")).sorted().forEach(cp::add);
    }
    assertTrue(cp.size() >= 9, "Spark's Netty jars: " + cp);
    return cp;
  }

  static Path shadedJar() {
    Path jar = Path.of(property("ferrite.shaded.jar"));
    assertTrue(Files.isRegularFile(jar), jar + " (built by `package`)");
    return jar;
  }

  /** HadoopProbe alone: the test classes directory (the probe names no other test class). */
  private static String probeClasses() {
    return Path.of(HadoopProbe.class.getProtectionDomain().getCodeSource().getLocation().getPath())
        .toString();
  }

  /**
   * The unshaded client's class path as Maven gives it to a project that declares {@code
   * ferrite-hadoop} and then {@code spark-core_2.12:3.5.9} (checked with {@code dependency:list}):
   * Maven picks each Netty module's version on its own, nearest first, so netty-common, -resolver,
   * -transport-native-unix-common and -transport-native-epoll come from Spark (4.1.96, through
   * netty-all) and netty-buffer, -transport, -codec, -handler and -transport-classes-epoll from
   * Ferrite (4.1.118). netty-buffer 4.1.118's PoolThreadCache then calls a netty-common method
   * 4.1.96 lacks.
   */
  private static List<String> mavenMediated(List<String> client) throws IOException {
    List<String> spark = hostClassPath();
    List<String> out = new ArrayList<>();
    for (String jar : client) {
      String name = Path.of(jar).getFileName().toString();
      String artifact = name.replaceFirst("-4\\.1\\.118\\.Final.*", "");
      boolean fromSpark =
          !artifact.equals(name)
              && List.of(
                      "netty-common",
                      "netty-resolver",
                      "netty-transport-native-unix-common",
                      "netty-transport-native-epoll")
                  .contains(artifact);
      if (fromSpark) {
        String replacement =
            spark.stream()
                .filter(s -> Path.of(s).getFileName().toString().startsWith(artifact + "-4.1.96"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no 4.1.96 jar of " + artifact));
        out.add(replacement);
      } else {
        out.add(jar);
      }
    }
    assertEquals(client.size(), out.size());
    assertTrue(out.stream().anyMatch(s -> s.contains("netty-common-4.1.96")), out.toString());
    assertTrue(out.stream().anyMatch(s -> s.contains("netty-buffer-4.1.118")), out.toString());
    return out;
  }

  private static List<String> lines(String classPathFile) throws IOException {
    String text =
        Files.readString(
            Path.of(property("ferrite.classpath.dir"), classPathFile), StandardCharsets.UTF_8);
    return List.of(text.strip().split(File.pathSeparator));
  }

  /** The Netty each Spark the build can test brings (the pom's spark.test.netty.version). */
  private static final Map<String, String> NETTY_OF =
      Map.of("3.5.9", "4.1.96.Final", "4.0.4", "4.1.118.Final");

  private static String scala() {
    return property("ferrite.spark.scala");
  }

  private static String sparkVersion() {
    return property("ferrite.spark.version");
  }

  static String property(String key) {
    String v = System.getProperty(key);
    assertTrue(v != null, key + " is set by the surefire execution \"shaded-jar\"");
    return v;
  }
}
