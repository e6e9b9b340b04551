package io.ferrite.fabric.testing;

import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Gives each test a seed and a {@link Random} made from it, and says how to replay a failure.
 *
 * <pre>
 * &#64;ExtendWith(SeedExtension.class)
 * class RegionTest {
 *   &#64;Test
 *   void survivesRandomWrites(Random random) { ... }      // or (TestSeed seed)
 * }
 * </pre>
 *
 * <p>The seed is {@code -Dtests.seed=N} when that property is set (decimal, or hex with {@code
 * 0x}), otherwise a fresh random value per test. Every {@code Random} parameter of one test (its
 * {@code @BeforeEach} methods and the test method) is the same instance, so one seed replays the
 * whole sequence. When a test fails the extension prints to stderr, and publishes as a report
 * entry:
 *
 * <pre>
 * reproduce with -Dtests.seed=-6148914691236517206 (RegionTest#survivesRandomWrites)
 *   e.g. mvn -B test -pl &lt;module&gt; -Dtest=RegionTest#survivesRandomWrites -Dtests.seed=...
 * </pre>
 *
 * (Surefire passes {@code -D} user properties to the forked test JVM.) Only what the test draws
 * from the seed is replayed: thread scheduling is not.
 */
public final class SeedExtension implements BeforeEachCallback, ParameterResolver, TestWatcher {
  /** The system property that fixes the seed. */
  public static final String PROPERTY = "tests.seed";

  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(SeedExtension.class);

  @Override
  public void beforeEach(ExtensionContext context) {
    seed(context);
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    Class<?> type = parameter.getParameter().getType();
    return type == Random.class || type == TestSeed.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    Class<?> type = parameter.getParameter().getType();
    if (type == TestSeed.class) {
      return seed(context);
    }
    if (type == Random.class) {
      return random(context);
    }
    throw new ParameterResolutionException("SeedExtension cannot resolve " + type);
  }

  @Override
  public void testFailed(ExtensionContext context, Throwable cause) {
    TestSeed seed = context.getStore(NAMESPACE).get(TestSeed.class, TestSeed.class);
    if (seed == null) {
      return;
    }
    String line = reproduceLine(context, seed);
    context.publishReportEntry(PROPERTY, Long.toString(seed.value()));
    System.err.println(line);
    System.err.flush();
  }

  /** The seed of the current test (method or, for constructor parameters, class). */
  public static TestSeed seed(ExtensionContext context) {
    return context
        .getStore(NAMESPACE)
        .getOrComputeIfAbsent(
            TestSeed.class,
            k -> new TestSeed(configured().orElseGet(() -> ThreadLocalRandom.current().nextLong())),
            TestSeed.class);
  }

  /** The {@link Random} of the current test, made from {@link #seed}; one instance per test. */
  public static Random random(ExtensionContext context) {
    TestSeed seed = seed(context);
    return context
        .getStore(NAMESPACE)
        .getOrComputeIfAbsent(Random.class, k -> new Random(seed.value()), Random.class);
  }

  /** The line printed when a test fails. */
  static String reproduceLine(ExtensionContext context, TestSeed seed) {
    String test =
        context.getRequiredTestClass().getSimpleName()
            + context.getTestMethod().map(m -> "#" + m.getName()).orElse("");
    return "reproduce with "
        + seed.reproduceOption()
        + " ("
        + test
        + ")"
        + System.lineSeparator()
        + "  e.g. mvn -B test -pl <module> -Dtest="
        + test
        + " "
        + seed.reproduceOption();
  }

  /** The seed fixed by {@code -Dtests.seed}, if any. */
  static Optional<Long> configured() {
    String v = System.getProperty(PROPERTY);
    if (v == null || v.isBlank()) {
      return Optional.empty();
    }
    return Optional.of(parse(v.trim()));
  }

  static long parse(String v) {
    try {
      if (v.startsWith("0x") || v.startsWith("0X")) {
        return Long.parseUnsignedLong(v.substring(2), 16);
      }
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "-D" + PROPERTY + "=" + v + " (expected: a decimal long, or hex with 0x)", e);
    }
  }
}
