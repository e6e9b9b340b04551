package io.ferrite.clientruntime;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.security.CodeSource;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The program a child JVM runs with an explicit class path (the host's Hadoop and Netty, then a
 * Ferrite client): reads a file the test wrote and writes one the test reads, through Hadoop's
 * {@link FileSystem} API and nothing of Ferrite's, as a user of {@code ferrite://} would. It names
 * no Ferrite class: the file system is found by its {@code META-INF/services} entry, which is what
 * the shaded jar must keep.
 *
 * <p>Arguments: {@code uri secretFile clusterId fabric readPath writePath seed size}. Prints the
 * jar the host's Netty was loaded from ({@code netty-common: ...}), then {@code probe ok}; any
 * failure leaves by an uncaught exception (exit status 1, the stack trace on stderr).
 */
public final class HadoopProbe {
  private HadoopProbe() {}

  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    Configuration conf = new Configuration();
    conf.set("fs.ferrite.secret.file", args[1]);
    conf.set("fs.ferrite.cluster.id", args[2]);
    conf.set("fs.ferrite.cluster.file", args[1] + ".no-cluster-file");
    conf.set("fs.ferrite.fabric", args[3]);
    Path readPath = new Path(args[4]);
    Path writePath = new Path(args[5]);
    long seed = Long.parseLong(args[6]);
    int size = Integer.parseInt(args[7]);

    // The host's Netty is really there and first: the test checks this line.
    CodeSource netty =
        Class.forName("io.netty.util.internal.PlatformDependent")
            .getProtectionDomain()
            .getCodeSource();
    System.out.println("netty-common: " + (netty == null ? "?" : netty.getLocation()));

    try (FileSystem fs = FileSystem.newInstance(uri, conf)) {
      byte[] expected = content(seed, size);
      byte[] got = new byte[size];
      try (InputStream in = fs.open(readPath)) {
        int n = in.readNBytes(got, 0, size);
        if (n != size || in.read() != -1) {
          throw new IOException(readPath + ": " + n + " bytes or more, expected " + size);
        }
      }
      if (!Arrays.equals(expected, got)) {
        throw new IOException(readPath + ": content differs from seed " + seed);
      }
      try (OutputStream out = fs.create(writePath, false)) {
        out.write(content(seed + 1, size));
      }
    }
    System.out.println("probe ok");
  }

  /** The bytes of a test file: both sides make them from the seed. */
  static byte[] content(long seed, int size) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }
}
