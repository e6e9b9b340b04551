package io.ferrite.kernel.config;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.netty.Tls;

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

  /** The fabrics of a real deployment: tcp (without TLS) and shm. */
  static FabricFactory standard() {
    return name -> StandardFabrics.open(name, null, FabricTuning.DEFAULTS);
  }

  /**
   * The fabrics of a real deployment as {@code cfg} configures them: tcp with {@link
   * FerriteConfig#tls()} when {@code tls.enabled}, and shm (never TLS: it does not leave the host),
   * both with {@link FerriteConfig#fabricTuning()}. The TLS files are read once, here.
   */
  static FabricFactory standard(FerriteConfig cfg) {
    Tls tls = cfg.tls();
    FabricTuning tuning = cfg.fabricTuning();
    return name -> StandardFabrics.open(name, tls, tuning);
  }

  /**
   * A client's fabrics: {@code cfg}'s tuning ({@link FerriteConfig#fabricTuning()}), and on tcp TLS
   * with {@code tls} (a client's trust, e.g. from a cluster file; null: no TLS) instead of {@code
   * cfg}'s {@code tls.*}.
   */
  static FabricFactory client(FerriteConfig cfg, Tls tls) {
    FabricTuning tuning = cfg.fabricTuning();
    return name -> StandardFabrics.open(name, tls, tuning);
  }

  /** Fails for every name: for processes that must not open a fabric of their own. */
  static FabricFactory none() {
    return name -> {
      throw new FerriteException(ErrorCode.UNSUPPORTED, "no fabric factory for '" + name + "'");
    };
  }
}
