package io.ferrite.fabric.testing;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.engine.reporting.ReportEntry;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs a test class in a nested JUnit launcher and returns how each of its tests ended: the way to
 * test an extension that is supposed to make tests fail. Classes run this way are marked
 * {@code @ExtendWith(ExtensionSelfTest.OnlyWhenLaunched.class)} so that they are skipped when the
 * build (or an IDE) runs them directly.
 */
public final class ExtensionSelfTest {
  private static final String KEY = "ferrite.extension-self-test";

  private ExtensionSelfTest() {}

  /** How one test ended, and what it published as report entries. */
  public record Outcome(TestExecutionResult result, Map<String, String> entries) {
    public boolean failed() {
      return result.getStatus() == TestExecutionResult.Status.FAILED;
    }

    public Optional<Throwable> failure() {
      return result.getThrowable();
    }
  }

  /** Runs {@code testClass}; returns the outcome of each test method by method name. */
  public static Map<String, Outcome> run(Class<?> testClass) {
    LauncherDiscoveryRequest request =
        LauncherDiscoveryRequestBuilder.request()
            .selectors(DiscoverySelectors.selectClass(testClass))
            .configurationParameter(KEY, "true")
            .build();
    Map<String, Outcome> outcomes = new LinkedHashMap<>();
    Map<String, Map<String, String>> entries = new LinkedHashMap<>();
    Launcher launcher = LauncherFactory.create();
    launcher.execute(
        request,
        new TestExecutionListener() {
          @Override
          public void reportingEntryPublished(TestIdentifier id, ReportEntry entry) {
            entries
                .computeIfAbsent(id.getUniqueId(), k -> new LinkedHashMap<>())
                .putAll(entry.getKeyValuePairs());
          }

          @Override
          public void executionFinished(TestIdentifier id, TestExecutionResult result) {
            if (id.isTest()) {
              String method =
                  id.getSource()
                      .filter(
                          s ->
                              s
                                  instanceof
                                  org.junit.platform.engine.support.descriptor.MethodSource)
                      .map(
                          s ->
                              ((org.junit.platform.engine.support.descriptor.MethodSource) s)
                                  .getMethodName())
                      .orElse(id.getDisplayName());
              outcomes.put(
                  method, new Outcome(result, entries.getOrDefault(id.getUniqueId(), Map.of())));
            }
          }
        });
    return outcomes;
  }

  /** Enables a class only when {@link #run} launches it. */
  public static final class OnlyWhenLaunched implements ExecutionCondition {
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
      return context.getConfigurationParameter(KEY).isPresent()
          ? ConditionEvaluationResult.enabled("launched by ExtensionSelfTest")
          : ConditionEvaluationResult.disabled("runs only inside ExtensionSelfTest.run");
    }
  }
}
