package io.ferrite.cli;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import picocli.CommandLine.Option;

/**
 * How the faces' data commands ({@code kv}, {@code tree}) read keys and values from the command
 * line and print them: UTF-8 text, or hex with {@code --hex}. A picocli mixin.
 */
final class KeyCodec {
  @Option(names = "--hex", description = "Keys and values are hex, and values print as hex.")
  boolean hex;

  /** The bytes of {@code s}: its UTF-8, or the hex it spells with {@code --hex}. */
  byte[] decode(String s) {
    if (!hex) {
      return s.getBytes(StandardCharsets.UTF_8);
    }
    try {
      return HexFormat.of().parseHex(s);
    } catch (IllegalArgumentException e) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "not hex: '" + s + "' (expected: pairs of 0-9a-f)");
    }
  }

  /** Text if the bytes are printable UTF-8, else hex (always hex with --hex). */
  String show(byte[] b) {
    if (!hex) {
      try {
        String s =
            StandardCharsets.UTF_8
                .newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(b))
                .toString();
        if (s.chars().noneMatch(c -> c < 0x20 && c != '\n' && c != '\t')) {
          return s;
        }
      } catch (CharacterCodingException e) {
        // Not text: print hex.
      }
    }
    return "0x" + HexFormat.of().formatHex(b);
  }
}
