package io.ferrite.kernel;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

/** The kernel tests' cluster: a {@link ClusterHarness} over the local fabric. */
public final class LocalCluster extends ClusterHarness {
  public static final Credentials CREDENTIALS =
      new Credentials(
          "kernel-test", "0123456789abcdef-kernel-secret".getBytes(StandardCharsets.UTF_8));

  public LocalCluster(Path dataDir) throws IOException {
    this(dataDir, Map.of());
  }

  /** A cluster whose configuration has {@code overrides} on top of the test defaults. */
  public LocalCluster(Path dataDir, Map<String, String> overrides) throws IOException {
    super(dataDir, CREDENTIALS, false, overrides);
  }
}
