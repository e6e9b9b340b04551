package io.ferrite.kernel.ops;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Lets one class use an API the forbidden-apis check refuses, saying why. Used for {@code
 * com.sun.net.httpserver}: the bundled {@code jdk-non-portable} signatures flag every {@code
 * com.sun.*} package, but this one is a supported, exported JDK API (module {@code
 * jdk.httpserver}), the one the metrics endpoint is meant to run on without a web framework.
 */
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD})
public @interface SuppressForbidden {
  /** Why the use is right here. */
  String reason();
}
