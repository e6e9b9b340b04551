package io.ferrite.kernel.proto;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Little-endian words in a {@code byte[]}: the byte order of every layout clients read one-sided
 * (kv buckets and extents, tree nodes, tx objects), read and written through one set of view var
 * handles.
 */
public final class LittleEndian {
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INTS =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle SHORTS =
      MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);

  private LittleEndian() {}

  public static long getLong(byte[] b, int at) {
    return (long) LONGS.get(b, at);
  }

  public static void putLong(byte[] b, int at, long v) {
    LONGS.set(b, at, v);
  }

  public static int getInt(byte[] b, int at) {
    return (int) INTS.get(b, at);
  }

  public static void putInt(byte[] b, int at, int v) {
    INTS.set(b, at, v);
  }

  /** The unsigned 16-bit word at {@code at}. */
  public static int getU16(byte[] b, int at) {
    return ((short) SHORTS.get(b, at)) & 0xFFFF;
  }
}
