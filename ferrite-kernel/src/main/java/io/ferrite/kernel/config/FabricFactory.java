package io.ferrite.kernel.config;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FerriteException;

/**
 * Opens a {@link Fabric} by name ({@code tcp}, {@code shm}, {@code local}). Masters, memory servers
 * and clients ask for the fabrics their configuration names; tests pass a factory of local fabrics
 * sharing one in-JVM network. The caller owns and closes every fabric it opens.
 */
@FunctionalInterface
public interface FabricFactory {
  /**
   * A new fabric instance of kind {@code name}.
   *
   * @throws FerriteException {@link ErrorCode#UNSUPPORTED} if this factory cannot make it
   */
  Fabric open(String name);

  /** The fabrics of a real deployment: tcp and shm. */
  static FabricFactory standard() {
    return StandardFabrics::open;
  }

  /** Fails for every name: for processes that must not open a fabric of their own. */
  static FabricFactory none() {
    return name -> {
      throw new FerriteException(ErrorCode.UNSUPPORTED, "no fabric factory for '" + name + "'");
    };
  }
}
