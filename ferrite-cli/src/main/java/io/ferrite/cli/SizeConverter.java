package io.ferrite.cli;

import io.ferrite.kernel.proto.Sizes;
import picocli.CommandLine;

/** Parses byte sizes: {@code 20MB}, {@code 1GiB}, {@code 512m}, {@code 4096} (k, m, g = 1024^n). */
public final class SizeConverter implements CommandLine.ITypeConverter<Long> {
  @Override
  public Long convert(String value) {
    try {
      return Sizes.parse(value);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.TypeConversionException(
          "size: '"
              + value
              + "' (expected: a number of bytes with an optional k, m, g or t suffix,"
              + " powers of 1024, e.g. 20MB, 1GiB, 512m)");
    }
  }
}
