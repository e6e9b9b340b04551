package io.ferrite.tx;

/**
 * A function a client ships to the primary of an object (FaRM §3.4, function shipping: "executing a
 * transaction at the primary of its objects"), run there as a single-server transaction: its reads
 * come from the server's own memory, its writes are committed by the server's local commit (locks,
 * validation of what it read, apply) and are retried there on a conflict. So a read-modify-write of
 * hot objects costs one round trip instead of a read, a LOCK and a COMMIT.
 *
 * <p>Functions are code installed on the memory servers, not sent by the client: a server finds
 * them with {@link java.util.ServiceLoader} ({@code META-INF/services/io.ferrite.tx.TxFunction} on
 * its class path) and a client names one by {@link #name}. A function sees only objects whose
 * primary is that server (the primary of the address it was shipped to); it may run more than once
 * per call (a conflict retries it), so it must have no effect other than through its {@link
 * LocalTx}. It runs on the server's service thread: it must not block.
 */
public interface TxFunction {
  /** The name clients ship it by (unique on a server). */
  String name();

  /**
   * Runs once per attempt. What it returns reaches the client if this attempt commits.
   *
   * @param tx the objects of this server, read and written in one local transaction
   * @param address the object the client shipped it to
   * @param argument the client's bytes
   * @throws io.ferrite.fabric.FerriteException to abort: nothing is applied, the client gets the
   *     exception's code and message
   */
  byte[] apply(LocalTx tx, FatPointer address, byte[] argument);

  /** The transaction a shipped function runs in, at the primary of its objects. */
  interface LocalTx {
    /**
     * The payload of {@code p}, from this server's memory; the version read is validated at commit.
     *
     * @throws io.ferrite.fabric.FerriteException NOT_FOUND if freed; INVALID_ARGUMENT if {@code
     *     p}'s primary is another server
     */
    byte[] read(FatPointer p);

    /** Writes {@code value} (at most {@code p.size()} bytes) to {@code p} at commit. */
    void write(FatPointer p, byte[] value);

    /** Frees {@code p} at commit. */
    void free(FatPointer p);

    /** Allocates an object of {@code size} bytes in the address's region; freed again on abort. */
    FatPointer alloc(int size);
  }
}
