package io.ferrite.apps.worker;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.memory.Mapping;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * What a failed worker leaves in its area of a coordination region for the coordinator: a u16
 * length, then up to {@code max} bytes of UTF-8 {@code CODE|text}, so the user sees the worker's
 * own code ({@code NO_SPACE} stays {@code NO_SPACE}) and why. One writer (the failing worker)
 * before it marks its barrier byte failed; the barrier orders the coordinator's read after it.
 *
 * @param code the failure's code ({@code INTERNAL} when the worker had none)
 * @param text what the worker said
 */
public record WorkerError(ErrorCode code, String text) {
  /** Bytes the slot takes for {@code max} bytes of text. */
  public static int slotBytes(int max) {
    return 2 + max;
  }

  /** Writes {@code code} and {@code text} (truncated to {@code max} bytes) at {@code at}. */
  public static void write(Mapping m, long at, int max, ErrorCode code, String text) {
    byte[] utf8 = (code.name() + "|" + text).getBytes(StandardCharsets.UTF_8);
    int n = Math.min(utf8.length, max);
    ByteBuffer b = ByteBuffer.allocateDirect(2 + n).order(ByteOrder.LITTLE_ENDIAN);
    b.putShort(0, (short) n);
    b.put(2, utf8, 0, n);
    m.writeSync(at, b);
  }

  /** Reads the slot at {@code at}. */
  public static WorkerError read(Mapping m, long at, int max) {
    ByteBuffer b = ByteBuffer.allocateDirect(2 + max).order(ByteOrder.LITTLE_ENDIAN);
    m.readSync(at, b);
    byte[] utf8 = new byte[Math.min(b.getShort(0) & 0xFFFF, max)];
    b.get(2, utf8);
    String s = new String(utf8, StandardCharsets.UTF_8);
    int bar = s.indexOf('|');
    ErrorCode code = ErrorCode.INTERNAL;
    if (bar > 0) {
      try {
        code = ErrorCode.valueOf(s.substring(0, bar));
        s = s.substring(bar + 1);
      } catch (IllegalArgumentException e) {
        // Not a code: the whole text is the message.
      }
    }
    return new WorkerError(code, s);
  }
}
