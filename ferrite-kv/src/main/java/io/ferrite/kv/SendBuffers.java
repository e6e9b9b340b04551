package io.ferrite.kv;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A caller thread's direct buffer for the blocking writes it encodes (a {@link KvTable#multiPut}'s
 * last MULTI_PUT), reused from call to call.
 *
 * <p>Why: a request encoded into a new heap array (a {@code Wire.Writer}) costs the allocation of
 * its ~17 KiB (16 pairs of 1 KiB) and, when the tcp lane writes it, the JDK's copy of the heap
 * bytes into a temporary direct buffer before the {@code writev}; encoded into a direct buffer the
 * lane writes it as it is (issue #19: the caller's CPU per 16 × 1 KiB batch).
 *
 * <p>Ownership: {@link #take} hands the thread's buffer over (or a new one), {@link #give} returns
 * it once the call answered normally — an answer means the server read the whole request, so
 * nothing still reads the buffer. A call that failed may have left the request in a write queue:
 * its buffer is not given back (the next {@link #take} allocates one). Not for requests the caller
 * does not wait for.
 */
final class SendBuffers {
  /** Requests larger than this are not kept (a tcp lane takes up to 64 KiB). */
  static final int MAX_KEPT = 64 << 10;

  private static final ThreadLocal<ByteBuffer> KEPT = new ThreadLocal<>();

  private SendBuffers() {}

  /** A cleared little-endian direct buffer of at least {@code bytes}, owned by the caller. */
  static ByteBuffer take(int bytes) {
    ByteBuffer b = KEPT.get();
    if (b != null && b.capacity() >= bytes) {
      KEPT.set(null);
      return b.clear();
    }
    if (bytes > MAX_KEPT) {
      return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
    // Rounded up so that batches of slightly different sizes share one buffer.
    int cap = Math.max(4096, Integer.highestOneBit(bytes - 1) << 1);
    return ByteBuffer.allocateDirect(Math.min(cap, MAX_KEPT)).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Gives {@code b} back for the thread's next request (the call that sent it answered). */
  static void give(ByteBuffer b) {
    if (b.isDirect()) {
      KEPT.set(b);
    }
  }
}
