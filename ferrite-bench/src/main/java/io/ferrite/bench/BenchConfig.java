package io.ferrite.bench;

import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import java.util.Map;

/**
 * The configuration a benchmark's clusters, clients and fabrics start from: the defaults with the
 * {@code FERRITE_*} environment on top, so that an A/B switch is one variable on the command line
 * ({@code FERRITE_NETTY_LANES=0 ferrite bench kv ...}, {@code FERRITE_SHM_RINGS=false}, {@code
 * FERRITE_KV_EXTENT_HINTS=0}, {@code FERRITE_NODES_CACHED_GETS=false}); each benchmark then sets
 * the keys its cluster needs (ports, directories, capacities) over it.
 */
public final class BenchConfig {
  private BenchConfig() {}

  /** A builder holding the defaults and the environment. */
  public static FerriteConfig.Builder builder() {
    return FerriteConfig.builder().env(System.getenv());
  }

  /** The defaults and the environment. */
  public static FerriteConfig environment() {
    return FerriteConfig.load(null, System.getenv(), Map.of());
  }

  /** tcp and shm fabrics with the environment's switches ({@code netty.*}, {@code shm.*}). */
  public static FabricFactory fabrics() {
    return FabricFactory.standard(environment());
  }
}
