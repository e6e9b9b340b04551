package io.ferrite.kernel.log;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log's recovery: intact records replay in order; a torn or corrupt tail is cut off; a rewrite
 * (compaction) replaces the log whole, and one that crashed before its rename leaves the old log.
 * Group commit: a flush completes only after an fsync that began after its records were appended; a
 * rewrite completes waiting flushes; a failed fsync fails them and every later one.
 */
class OpLogTest {
  @TempDir Path dir;

  private static List<String> replay(Path f) {
    List<String> out = new ArrayList<>();
    OpLog log =
        OpLog.open(
            f,
            b -> {
              byte[] x = new byte[b.remaining()];
              b.get(x);
              out.add(new String(x, UTF_8));
            });
    log.close();
    return out;
  }

  @Test
  void tornAndCorruptTailsAreCutAndAppendsContinue() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    for (String s : List.of("one", "two", "three")) {
      log.append(s.getBytes(UTF_8));
    }
    log.sync();
    log.close();
    assertEquals(List.of("one", "two", "three"), replay(f));
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.APPEND)) {
      // A record header that promises 100 bytes, then the crash.
      ch.write(ByteBuffer.wrap(new byte[] {100, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    }
    assertEquals(List.of("one", "two", "three"), replay(f));
    long size = Files.size(f);
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {'X'}), size - 1); // corrupt the last record's body
    }
    assertEquals(List.of("one", "two"), replay(f));
    log = OpLog.open(f, b -> {});
    log.append("four".getBytes(UTF_8));
    log.close();
    assertEquals(List.of("one", "two", "four"), replay(f));
  }

  /** A batch appended with one write reads back as its records, in order, between single ones. */
  @Test
  void aBatchIsItsRecordsInOrder() {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    log.append("one".getBytes(UTF_8));
    log.appendAll(List.of("two".getBytes(UTF_8), new byte[0], "four".getBytes(UTF_8)));
    log.appendAll(List.of());
    log.append("five".getBytes(UTF_8));
    assertEquals(5, log.appended());
    log.close();
    assertEquals(List.of("one", "two", "", "four", "five"), replay(f));
  }

  /**
   * A flipped byte in a record with intact records after it is corruption, not a torn tail: the log
   * refuses to open, naming the file and the offset, and leaves the file as it was.
   */
  /** A record with the {@link OpLog#FRAME} bytes a framed append leaves for the log in front. */
  private static byte[] framed(String body) {
    byte[] b = body.getBytes(UTF_8);
    byte[] f = new byte[OpLog.FRAME + b.length];
    Arrays.fill(f, 0, OpLog.FRAME, (byte) 0x5A); // whatever is there is overwritten
    System.arraycopy(b, 0, f, OpLog.FRAME, b.length);
    return f;
  }

  @Test
  void framedRecordsAreTheSameRecordsAndKeepTheOrder() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    log.append("one".getBytes(UTF_8));
    log.appendFramed(framed("two"));
    log.appendAllFramed(List.of(framed("three"), framed(""), framed("five")));
    log.appendAllFramed(List.of());
    log.appendAll(List.of("six".getBytes(UTF_8)));
    List<byte[]> many = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) { // more buffers than one gathering write takes (IOV_MAX)
      many.add(framed("r" + i));
    }
    log.appendAllFramed(many);
    assertEquals(2_006, log.appended());
    log.close();
    List<String> expected = new ArrayList<>(List.of("one", "two", "three", "", "five", "six"));
    for (int i = 0; i < 2_000; i++) {
      expected.add("r" + i);
    }
    assertEquals(expected, replay(f));
    // Byte for byte what plain appends write.
    Path g = dir.resolve("plain.log");
    OpLog plain = OpLog.open(g, b -> {});
    for (String s : expected) {
      plain.append(s.getBytes(UTF_8));
    }
    plain.close();
    assertArrayEquals(Files.readAllBytes(g), Files.readAllBytes(f));
    try (OpLog again = OpLog.open(f, b -> {})) {
      FerriteException e =
          assertThrows(FerriteException.class, () -> again.appendFramed(new byte[3]));
      assertEquals(ErrorCode.INTERNAL, e.code());
    }
  }

  @Test
  void aBadRecordFollowedByIntactOnesRefusesToOpen() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    for (String s : List.of("one", "two", "three", "four")) {
      log.append(s.getBytes(UTF_8));
    }
    log.close();
    byte[] all = Files.readAllBytes(f);
    int two = 12 + 3; // after "one"'s record
    all[two + 12 + 1] ^= 0x01; // a byte of "two"'s body
    Files.write(f, all);
    FerriteException e = assertThrows(FerriteException.class, () -> OpLog.open(f, b -> {}));
    assertEquals(ErrorCode.INTERNAL, e.code());
    assertTrue(e.getMessage().contains(f + " is corrupt at offset " + two), e.getMessage());
    assertTrue(
        e.getMessage().contains("intact record follows at offset " + (two + 15)), e.getMessage());
    assertTrue(java.util.Arrays.equals(all, Files.readAllBytes(f)), "a refusal changes nothing");
    // Cut where the message says: the log opens with what preceded the bad record.
    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
      ch.truncate(two);
    }
    assertEquals(List.of("one"), replay(f));
  }

  @Test
  void aRewriteReplacesTheLogWholeAndAppendsFollowIt() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    for (int i = 0; i < 100; i++) {
      log.append(("old" + i).getBytes(UTF_8));
    }
    long before = log.bytes();
    log.rewrite(
        sink -> {
          sink.accept("snap1".getBytes(UTF_8));
          sink.accept("snap2".getBytes(UTF_8));
        });
    assertTrue(log.bytes() < before, log.bytes() + " vs " + before);
    log.append("after".getBytes(UTF_8));
    log.sync();
    log.close();
    assertEquals(List.of("snap1", "snap2", "after"), replay(f));
    assertFalse(Files.exists(dir.resolve("kv.log.rewrite")));
  }

  /**
   * A rewrite in two halves: records appended (and flushed) after its snapshot, from another
   * thread, while the snapshot is fsynced and copied, follow the snapshot in the new log, in order;
   * every flush completes; a second rewrite is refused while one runs.
   */
  @Test
  void aRewriteInTwoHalvesKeepsWhatWasAppendedAfterItsSnapshot() throws Exception {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    List<String> expected = new ArrayList<>(List.of("snap1", "snap2"));
    for (int i = 0; i < 100; i++) {
      log.append(("old" + i).getBytes(UTF_8));
    }
    OpLog.Rewrite r =
        log.beginRewrite(
            sink -> {
              sink.accept("snap1".getBytes(UTF_8));
              sink.accept("snap2".getBytes(UTF_8));
            });
    assertEquals(2, r.records());
    FerriteException twice =
        assertThrows(FerriteException.class, () -> log.beginRewrite(sink -> {}));
    assertEquals(ErrorCode.CONFLICT, twice.code(), twice.getMessage());
    log.append("between".getBytes(UTF_8));
    expected.add("between");
    // An appender that runs through the second half (it copies, fsyncs and swaps meanwhile).
    AtomicBoolean stop = new AtomicBoolean();
    List<String> appended = java.util.Collections.synchronizedList(new ArrayList<>());
    List<CompletableFuture<Void>> flushes =
        java.util.Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<Void> appender =
        CompletableFuture.runAsync(
            () -> {
              for (int i = 0; !stop.get() || i < 50; i++) {
                String s = "during" + i;
                synchronized (appended) {
                  log.append(s.getBytes(UTF_8));
                  appended.add(s);
                }
                flushes.add(log.flush());
              }
            });
    log.finishRewrite(r);
    stop.set(true);
    appender.get(30, TimeUnit.SECONDS);
    for (CompletableFuture<Void> flush : flushes) {
      flush.get(30, TimeUnit.SECONDS);
    }
    log.append("after".getBytes(UTF_8));
    log.sync();
    log.close();
    expected.addAll(appended);
    expected.add("after");
    assertEquals(expected, replay(f));
    assertFalse(Files.exists(dir.resolve("kv.log.rewrite")));
  }

  /**
   * A snapshot gathered into buffered writes: records that fill several buffers, one larger than a
   * buffer, and the ones after it, replay whole and in order.
   */
  @Test
  void aSnapshotOfManyBuffersAndARecordLargerThanOneReplaysInOrder() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    log.append("old".getBytes(UTF_8));
    List<byte[]> records = new ArrayList<>();
    java.util.Random random = new java.util.Random(42);
    for (int i = 0; i < 3000; i++) {
      byte[] b = new byte[i == 1500 ? OpLog.SNAPSHOT_BUFFER + 7 : 1 + random.nextInt(2000)];
      random.nextBytes(b);
      records.add(b);
    }
    log.finishRewrite(log.beginRewrite(sink -> records.forEach(sink)));
    log.close();
    List<byte[]> back = new ArrayList<>();
    OpLog.open(
            f,
            b -> {
              byte[] copy = new byte[b.remaining()];
              b.get(copy);
              back.add(copy);
            })
        .close();
    assertEquals(records.size(), back.size());
    for (int i = 0; i < records.size(); i++) {
      assertArrayEquals(records.get(i), back.get(i), "record " + i);
    }
  }

  /** A log closed between the halves keeps its old file whole; the new one is deleted. */
  @Test
  void aRewriteWhoseLogClosesBeforeItsSecondHalfLeavesTheOldLog() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    log.append("one".getBytes(UTF_8));
    OpLog.Rewrite r = log.beginRewrite(sink -> sink.accept("snap".getBytes(UTF_8)));
    log.append("two".getBytes(UTF_8));
    log.close();
    FerriteException e = assertThrows(FerriteException.class, () -> log.finishRewrite(r));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
    assertFalse(Files.exists(dir.resolve("kv.log.rewrite")), "the partial rewrite is removed");
    assertEquals(List.of("one", "two"), replay(f));
  }

  @Test
  void aRewriteThatFailsKeepsTheOldLog() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    log.append("one".getBytes(UTF_8));
    assertThrows(
        IllegalStateException.class,
        () ->
            log.rewrite(
                sink -> {
                  sink.accept("half".getBytes(UTF_8));
                  throw new IllegalStateException("the snapshot failed");
                }));
    assertFalse(Files.exists(dir.resolve("kv.log.rewrite")), "the partial rewrite is removed");
    log.append("two".getBytes(UTF_8));
    log.close();
    assertEquals(List.of("one", "two"), replay(f));
  }

  @Test
  void aRewriteCutShortBeforeItsRenameLeavesTheOldLog() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    log.append("one".getBytes(UTF_8));
    log.append("two".getBytes(UTF_8));
    log.close();
    // What a crash in the middle of a rewrite leaves: the new log, partly written, beside the old.
    Files.write(dir.resolve("kv.log.rewrite"), new byte[] {5, 0, 0, 0, 1, 2, 3});
    assertEquals(List.of("one", "two"), replay(f));
    assertFalse(Files.exists(dir.resolve("kv.log.rewrite")), "the stale rewrite is deleted");
  }

  /** An fsync that blocks while {@code hold} is closed, and says when it is entered. */
  private static OpLog.Fsync held(CountDownLatch hold, Semaphore entered, AtomicBoolean fail) {
    return ch -> {
      entered.release();
      try {
        hold.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (fail.get()) {
        throw new IOException("injected fsync failure");
      }
      ch.force(false);
    };
  }

  @Test
  void aFlushCompletesOnlyAfterAnFsyncThatStartedAfterItsRecords() throws Exception {
    Path f = dir.resolve("kv.log");
    CountDownLatch hold = new CountDownLatch(1);
    Semaphore entered = new Semaphore(0);
    OpLog log = OpLog.open(f, b -> {}, held(hold, entered, new AtomicBoolean()));
    try {
      log.append("a".getBytes(UTF_8));
      CompletableFuture<Void> first = log.flush();
      assertTrue(entered.tryAcquire(30, TimeUnit.SECONDS)); // the syncer is in the held fsync
      log.append("b".getBytes(UTF_8)); // appended while that fsync runs: not covered by it
      CompletableFuture<Void> second = log.flush();
      assertFalse(first.isDone(), "answered before its fsync returned");
      hold.countDown();
      first.get(30, TimeUnit.SECONDS);
      second.get(30, TimeUnit.SECONDS);
      assertTrue(log.fsyncs() >= 2, "b needed an fsync of its own: " + log.fsyncs());
      assertTrue(log.flush().isDone(), "nothing new: no wait");
    } finally {
      hold.countDown();
      log.close();
    }
  }

  @Test
  void aRewriteCompletesTheFlushesWaitingForTheOldLog() throws Exception {
    Path f = dir.resolve("kv.log");
    CountDownLatch hold = new CountDownLatch(1);
    Semaphore entered = new Semaphore(0);
    OpLog log = OpLog.open(f, b -> {}, held(hold, entered, new AtomicBoolean()));
    try {
      log.append("x".getBytes(UTF_8));
      CompletableFuture<Void> held = log.flush();
      assertTrue(entered.tryAcquire(30, TimeUnit.SECONDS));
      log.append("y".getBytes(UTF_8));
      CompletableFuture<Void> waiting = log.flush();
      // The rewrite waits for the fsync in progress (it swaps the channel only between fsyncs).
      CompletableFuture<Void> rewrite =
          CompletableFuture.runAsync(() -> log.rewrite(sink -> sink.accept("xy".getBytes(UTF_8))));
      // Never done while the fsync is held (a correct log cannot finish it then; a wait that is
      // too short only makes the check weaker, never wrong).
      assertThrows(
          TimeoutException.class,
          () -> rewrite.get(200, TimeUnit.MILLISECONDS),
          "the rewrite swapped the channel under a running fsync");
      hold.countDown();
      rewrite.get(30, TimeUnit.SECONDS);
      held.get(30, TimeUnit.SECONDS);
      waiting.get(30, TimeUnit.SECONDS); // covered by the rewritten, fsynced file
      log.append("z".getBytes(UTF_8));
      log.flush().get(30, TimeUnit.SECONDS);
    } finally {
      hold.countDown();
      log.close();
    }
    assertEquals(List.of("xy", "z"), replay(f));
  }

  @Test
  void aFailedFsyncFailsItsFlushesAndEveryLaterOne() throws Exception {
    Path f = dir.resolve("kv.log");
    CountDownLatch hold = new CountDownLatch(1);
    AtomicBoolean fail = new AtomicBoolean(true);
    OpLog log = OpLog.open(f, b -> {}, held(hold, new Semaphore(0), fail));
    try {
      log.append("lost?".getBytes(UTF_8));
      CompletableFuture<Void> flush = log.flush();
      hold.countDown();
      CompletionException e =
          assertThrows(
              CompletionException.class, () -> flush.orTimeout(30, TimeUnit.SECONDS).join());
      assertEquals(ErrorCode.INTERNAL, FerriteException.unwrap(e).code());
      fail.set(false); // a later fsync would succeed, but may not have the lost pages: refused
      log.append("later".getBytes(UTF_8));
      FerriteException later = assertThrows(FerriteException.class, log::sync);
      assertEquals(ErrorCode.INTERNAL, later.code());
    } finally {
      log.close();
    }
  }

  /**
   * FileChannel is interruptible: an interrupt of a thread in (or entering) a write or fsync closes
   * the channel for everybody. A log shared by a server's threads must survive that: an appender
   * with a pending interrupt appends (and keeps its interrupt), and a channel closed under the
   * syncer or under the next appender is reopened, losing nothing. (Found in TxRepairTest: a
   * stopping server's interrupted thread, handling a peer's record on the local fabric, closed that
   * peer's log and every later commit there failed.)
   */
  @Test
  void anInterruptOrAChannelClosedUnderTheLogLosesNothing() throws Exception {
    Path f = dir.resolve("kv.log");
    AtomicBoolean closeInFsync = new AtomicBoolean();
    AtomicBoolean closeAfterFsync = new AtomicBoolean();
    OpLog log =
        OpLog.open(
            "kv",
            f,
            b -> {},
            ch -> {
              if (closeInFsync.getAndSet(false)) {
                ch.close(); // as an appender's interrupt would, while the syncer forces
              }
              ch.force(false);
              if (closeAfterFsync.getAndSet(false)) {
                ch.close(); // the next append finds it closed
              }
            });
    try {
      log.append("a".getBytes(UTF_8));
      AtomicBoolean stillInterrupted = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread t =
          new Thread(
              () -> {
                try {
                  Thread.currentThread().interrupt();
                  log.append("b".getBytes(UTF_8));
                  stillInterrupted.set(Thread.currentThread().isInterrupted());
                } catch (Throwable e) {
                  failed.set(e);
                }
              },
              "interrupted-appender");
      t.start();
      t.join();
      assertEquals(null, failed.get(), "an interrupted appender's append failed");
      assertTrue(stillInterrupted.get(), "the appender's interrupt was swallowed");
      closeInFsync.set(true);
      log.append("c".getBytes(UTF_8));
      log.flush().get(30, TimeUnit.SECONDS); // the syncer reopens and fsyncs
      closeAfterFsync.set(true);
      log.append("d".getBytes(UTF_8));
      log.flush().get(30, TimeUnit.SECONDS);
      log.append("e".getBytes(UTF_8)); // finds the channel closed: reopens, writes at the end
      log.sync();
    } finally {
      log.close();
    }
    assertEquals(List.of("a", "b", "c", "d", "e"), replay(f));
  }

  @Test
  void theZeroFilledTailOfALogThatWasNotClosedIsNotARecord() throws IOException {
    Path f = dir.resolve("kv.log");
    OpLog log = OpLog.open(f, b -> {});
    Path crashed = dir.resolve("crashed.log");
    try {
      for (String s : List.of("one", "two", "three")) {
        log.append(s.getBytes(UTF_8));
      }
      log.sync();
      assertEquals(3 * 12 + 11, log.bytes(), "bytes() is the records' end, not the file's size");
      // The file as a crash leaves it: the records, then the zero-filled space ahead of them.
      Files.copy(f, crashed);
    } finally {
      log.close();
    }
    assertTrue(Files.size(crashed) >= OpLog.PREALLOCATE, "preallocated: " + Files.size(crashed));
    assertEquals(List.of("one", "two", "three"), replay(crashed));
    OpLog again = OpLog.open(crashed, b -> {});
    again.append("four".getBytes(UTF_8));
    again.close();
    assertEquals(List.of("one", "two", "three", "four"), replay(crashed));
    assertEquals(4 * 12 + 15, Files.size(crashed), "a closed log ends at its last record");
    assertEquals(3 * 12 + 11, Files.size(f));
  }
}
