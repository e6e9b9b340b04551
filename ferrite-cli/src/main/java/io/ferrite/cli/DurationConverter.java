package io.ferrite.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import picocli.CommandLine;

/** Parses {@code 500ms}, {@code 2s}, {@code 1m}, {@code 1h} or ISO-8601 ({@code PT2S}). */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
  @Override
  public Duration convert(String value) {
    String v = value.trim().toLowerCase(Locale.ROOT);
    try {
      if (v.startsWith("pt")) {
        return Duration.parse(v.toUpperCase(Locale.ROOT));
      }
      if (v.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
      }
      if (v.endsWith("s")) {
        return Duration.ofMillis(
            Math.round(Double.parseDouble(v.substring(0, v.length() - 1)) * 1e3));
      }
      if (v.endsWith("m")) {
        return Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1)) * 60);
      }
      if (v.endsWith("h")) {
        return Duration.ofHours(Long.parseLong(v.substring(0, v.length() - 1)));
      }
    } catch (NumberFormatException | DateTimeParseException e) {
      throw new CommandLine.TypeConversionException(
          "duration: " + value + " (expected e.g. 500ms, 2s, 1.5s, 1m, PT2S)");
    }
    throw new CommandLine.TypeConversionException(
        "duration: " + value + " (expected a unit: ms, s, m or h, e.g. 500ms or 2s)");
  }
}
