package io.ferrite.nodes;

import io.ferrite.kernel.config.ConfigKeys;
import io.ferrite.kernel.config.FerriteConfig;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The nodes face's configuration keys, known to {@link FerriteConfig} through {@link ConfigKeys}
 * (META-INF/services) when the face is on the class path; read from the configuration the face is
 * given: the master's ({@code MasterContext.config()}) or a client's ({@code
 * FerriteClient.config()}).
 */
public final class NodesConfig implements ConfigKeys {
  /** Master: how long a client may answer a lookup from its cache without hearing from it. */
  public static final String LOOKUP_LEASE = "nodes.lookup.lease";

  /** Client: leased lookups: true, false (every lookup asks the master) or always. */
  public static final String LEASED_LOOKUPS = "nodes.leased.lookups";

  /** Client: whether gets over shm (or local) check kept lookups against version words. */
  public static final String CACHED_GETS = "nodes.cached.gets";

  /** For {@link java.util.ServiceLoader}. */
  public NodesConfig() {}

  @Override
  public List<Key> keys() {
    return List.of(
        new Key(
            LOOKUP_LEASE,
            "2s",
            "master: a client's cached lookup lease (what a dead client can cost a writer)"),
        new Key(
            LEASED_LOOKUPS,
            "true",
            "client: cache lookups under leases; false: ask the master; always: also on shm"),
        new Key(
            CACHED_GETS,
            "true",
            "client: gets over shm check cached lookups by version words; false: ask the master"));
  }

  @Override
  public void validate(FerriteConfig cfg) {
    lookupLease(cfg);
    leasedLookups(cfg);
    cfg.getBoolean(CACHED_GETS);
  }

  public static Duration lookupLease(FerriteConfig cfg) {
    return cfg.getDuration(LOOKUP_LEASE);
  }

  /** {@code true}, {@code false} or {@code always}. */
  public static String leasedLookups(FerriteConfig cfg) {
    String v = cfg.get(LEASED_LOOKUPS).toLowerCase(Locale.ROOT);
    if (!List.of("true", "false", "always").contains(v)) {
      throw new IllegalArgumentException(
          LEASED_LOOKUPS + ": '" + v + "' (expected: true, false or always)");
    }
    return v;
  }

  public static boolean cachedGets(FerriteConfig cfg) {
    return cfg.getBoolean(CACHED_GETS);
  }
}
