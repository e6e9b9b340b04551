package io.ferrite.bench;

import java.util.Objects;

/**
 * One measured value, optionally beside the ceiling (reference) it is bounded by, measured in the
 * same run.
 *
 * <p>{@code ratio} is oriented so that {@code > 1} always means "better than the reference": for
 * {@link Better#LOWER} values (latency) it is {@code referenceValue / value}, for {@link
 * Better#HIGHER} values (bandwidth) {@code value / referenceValue}. A ceiling is normally not
 * beaten, so fabric results have ratios at or below 1 and the ratio reads as "fraction of the
 * ceiling reached".
 *
 * @param name {@code <subject>.<op>.<size>.<statistic>}, e.g. {@code shm.read.8B.p50}
 * @param value the measured value
 * @param unit e.g. {@code ns} or {@code MiB/s}
 * @param better which direction is an improvement
 * @param reference the name of the reference result, or null for a result with no reference (a
 *     ceiling itself)
 * @param referenceValue the reference's value, NaN when there is no reference
 * @param ratio see above; NaN when there is no reference or either value is not positive
 */
public record BenchResult(
    String name,
    double value,
    String unit,
    Better better,
    String reference,
    double referenceValue,
    double ratio) {

  public BenchResult {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(unit, "unit");
    Objects.requireNonNull(better, "better");
  }

  /** A result with no reference, e.g. a ceiling. */
  public static BenchResult of(String name, double value, String unit, Better better) {
    return new BenchResult(name, value, unit, better, null, Double.NaN, Double.NaN);
  }

  /** A result beside {@code reference}, which must be in the same unit and direction. */
  public static BenchResult against(
      String name, double value, String unit, Better better, BenchResult reference) {
    if (!reference.unit().equals(unit) || reference.better() != better) {
      throw new IllegalArgumentException(
          "reference "
              + reference.name()
              + " is in "
              + reference.unit()
              + "/"
              + reference.better().label()
              + " (expected: "
              + unit
              + "/"
              + better.label()
              + ")");
    }
    return new BenchResult(
        name,
        value,
        unit,
        better,
        reference.name(),
        reference.value(),
        ratio(better, value, reference.value()));
  }

  /**
   * The ratio of {@code value} to {@code referenceValue}, oriented so that {@code > 1} means better
   * than the reference; NaN if either is not a positive finite number.
   */
  public static double ratio(Better better, double value, double referenceValue) {
    if (!(value > 0) || !(referenceValue > 0) || Double.isInfinite(value)) {
      return Double.NaN;
    }
    if (Double.isInfinite(referenceValue)) {
      return Double.NaN;
    }
    return better == Better.LOWER ? referenceValue / value : value / referenceValue;
  }

  public boolean hasReference() {
    return reference != null;
  }
}
