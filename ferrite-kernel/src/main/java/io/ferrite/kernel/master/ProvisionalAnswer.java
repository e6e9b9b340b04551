package io.ferrite.kernel.master;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * An extension's answer that the master may send before the journal's fsync covers the records its
 * mutation wrote, unlike every other answer ({@link MasterService}, "Acknowledgement after
 * durability").
 *
 * <p>Only for a mutation whose loss in a master crash nobody can observe as a lost acknowledgement:
 * it creates something provisional that no other client can see, that holds no resource anyone else
 * could be handed (no blocks), and that only a later, durable mutation of the same caller makes
 * real. The nodes face's CREATE of an empty File is the case: the File is invisible until its
 * PUBLISH (the writer's close), whose answer waits for the fsync that covers both records (the log
 * is written in order), so a user's create-then-close costs one fsync, not two. A crash between
 * them forgets the File, as the writer's own crash would; the writer's close then fails (the master
 * no longer knows the node), and nothing it was told had been made durable is lost.
 *
 * <p>Returned by {@link MasterExtension#handle} as is; the master recognises it only there (an
 * answer that completes later, or that a handler derives from this one, waits as usual).
 */
public final class ProvisionalAnswer extends CompletableFuture<ByteBuffer> {
  private ProvisionalAnswer() {}

  /** {@code answer}, sendable before the fsync that covers the records written for it. */
  public static CompletableFuture<ByteBuffer> of(ByteBuffer answer) {
    ProvisionalAnswer f = new ProvisionalAnswer();
    f.complete(answer);
    return f;
  }
}
