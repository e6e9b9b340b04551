package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kv.server.OpLog;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One copy's log of one tx region on disk: every record that changed the copy's committed state, in
 * the order it was applied. The records are bodies of the kv face's {@link OpLog} (length, XXH3-64,
 * body; a torn tail cut at open, corruption refused; group commit by one syncer thread per log):
 *
 * <pre>
 *  WRITES  u8 1 | i32 n | n × (fat pointer | i64 expected | u8 kind | bytes value)
 *  DECIDE  u8 2 | i64 txid | u8 commit
 *  FLOOR   u8 3 | i64 incarnation floor
 * </pre>
 *
 * A WRITES record is a committed write set of this region (a LOCAL record or a single-server commit
 * applied, a COMMIT applied, a DECIDE commit applied at a backup): each write installs its image at
 * {@code expected + 1}, a FREE bumps the incarnation. Replay applies them <b>by version</b> (as a
 * backup applies records: {@link TxMirror}), so two records of one object appended out of order
 * still leave the newer image. A DECIDE record is a decision of the decider region. A FLOOR record
 * is the lowest incarnation a recovered primary hands out (see {@link TxLogs#recover}).
 *
 * <p>Appends are writes to the page cache; {@link #flush} is the group commit (a future completed
 * by the syncer's fsync that covers every record appended before it). Thread-safe.
 */
final class TxLog implements AutoCloseable {
  static final int WRITES = 1;
  static final int DECIDE = 2;
  static final int FLOOR = 3;

  private final int region;
  private final Path file;
  private final OpLog log;

  private TxLog(int region, Path file, OpLog log) {
    this.region = region;
    this.file = file;
    this.log = log;
  }

  /** What a replay saw besides the writes: the highest incarnation any record names or sets. */
  static final class Replay {
    long maxIncarnation;
    long records;
  }

  /**
   * Opens (or creates) the log {@code file} of {@code region}, handing each intact record's writes
   * and decisions to {@code copy} (null: none expected, a fresh log), in order.
   */
  static TxLog open(int region, Path file, TxMirror copy, Replay seen, OpLog.Fsync fsync) {
    Consumer<ByteBuffer> replay =
        body -> {
          if (copy == null) {
            throw new FerriteException(
                ErrorCode.INTERNAL, "tx log " + file + " was expected empty (a fresh copy)");
          }
          Wire.Reader r = new Wire.Reader(body, "tx log record of region " + region);
          int type = r.u8("type");
          switch (type) {
            case WRITES -> {
              List<TxService.Write> ws = readWrites(r);
              r.end();
              for (TxService.Write w : ws) {
                long inc = w.ptr().incarnation() + (w.kind() == TxProtocol.KIND_FREE ? 1 : 0);
                seen.maxIncarnation = Math.max(seen.maxIncarnation, inc);
              }
              copy.accept(TxProtocol.REC_LOCAL, 0, 0, ws);
            }
            case DECIDE -> {
              long txid = r.i64("txid");
              boolean commit = r.u8("commit") != 0;
              r.end();
              copy.decide(txid, commit);
            }
            case FLOOR -> {
              seen.maxIncarnation = Math.max(seen.maxIncarnation, r.i64("floor"));
              r.end();
            }
            default ->
                throw new FerriteException(
                    ErrorCode.INTERNAL,
                    "tx log "
                        + file
                        + ": unknown record type "
                        + type
                        + " (a newer server's log?)");
          }
          seen.records++;
        };
    return new TxLog(region, file, OpLog.open("tx-region-" + region, file, replay, fsync));
  }

  int region() {
    return region;
  }

  Path file() {
    return file;
  }

  /** Appends a committed write set of this region (not yet durable: {@link #flush}). */
  void writes(List<TxService.Write> ws) {
    Wire.Writer w = new Wire.Writer().u8(WRITES).i32(ws.size());
    for (TxService.Write x : ws) {
      FatPointer.writeTo(w, x.ptr());
      w.i64(x.expected()).u8(x.kind()).bytes(x.value());
    }
    log.append(w.toArray());
  }

  /** Appends a decision of this decider region. */
  void decide(long txid, boolean commit) {
    log.append(new Wire.Writer().u8(DECIDE).i64(txid).u8(commit ? 1 : 0).toArray());
  }

  /** Appends an incarnation floor and makes the log durable (blocks: not on a fabric thread). */
  void floor(long incarnation) {
    log.append(new Wire.Writer().u8(FLOOR).i64(incarnation).toArray());
    log.sync();
  }

  /** Completed once every record appended before this call is on disk (one shared fsync). */
  CompletableFuture<Void> flush() {
    return log.flush();
  }

  long bytes() {
    return log.bytes();
  }

  long fsyncs() {
    return log.fsyncs();
  }

  private static List<TxService.Write> readWrites(Wire.Reader r) {
    int n = r.count("writes", 1 << 20);
    List<TxService.Write> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      FatPointer p = FatPointer.readFrom(r);
      long expected = r.i64("expectedVersion");
      int kind = r.u8("kind");
      byte[] value = r.bytes("value");
      out.add(new TxService.Write(p, expected, kind, value));
    }
    return out;
  }

  @Override
  public void close() {
    log.close();
  }
}
