package io.ferrite.apps.rsort;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * Where streamed records go: {@code write(target, offset, records)} puts whole records at byte
 * {@code offset} of output {@code target} (a bucket, or the one output of a sort), e.g. as a
 * one-sided write of a mapping. The future completes when {@code records} may be reused.
 */
@FunctionalInterface
public interface RecordSink {
  CompletableFuture<Void> write(int target, long offset, ByteBuffer records);

  /** A sink that copies into {@code dst} (one target, offsets are bytes of {@code dst}). */
  static RecordSink into(ByteBuffer dst) {
    return (target, offset, records) -> {
      dst.duplicate().put((int) offset, records, records.position(), records.remaining());
      return CompletableFuture.completedFuture(null);
    };
  }
}
