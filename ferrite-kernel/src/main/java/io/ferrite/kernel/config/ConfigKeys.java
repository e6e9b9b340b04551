package io.ferrite.kernel.config;

import java.util.List;

/**
 * Configuration keys a module brings: each face (kv, nodes...) lists its keys in a class named in
 * {@code META-INF/services/io.ferrite.kernel.config.ConfigKeys}, so that {@link FerriteConfig}
 * knows them (defaults, {@code ferrite config}, the rejection of unknown keys) exactly when the
 * face is on the class path. The face reads its keys from the {@link FerriteConfig} it is given
 * ({@code ServiceContext.config()}, {@code MasterContext.config()}, {@code
 * FerriteClient.config()}); nothing is registered at run time, so there is no order to get wrong.
 */
public interface ConfigKeys {
  /** One key: its name ({@code face.what}), default value and one-line description. */
  record Key(String name, String defaultValue, String description) {}

  /**
   * The keys, in the order {@code ferrite config} shows them. Called while {@link FerriteConfig}
   * initializes (once per class loader): it must not use {@link FerriteConfig}, only constants.
   */
  List<Key> keys();

  /**
   * Checks this module's keys in a configuration being built (e.g. a size's range).
   *
   * @throws IllegalArgumentException naming the key, the value and what was expected
   */
  default void validate(FerriteConfig cfg) {}
}
