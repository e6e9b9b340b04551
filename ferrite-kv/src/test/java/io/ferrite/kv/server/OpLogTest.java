package io.ferrite.kv.server;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log's recovery: intact records replay in order; a torn or corrupt tail is cut off; a rewrite
 * (compaction) replaces the log whole, and one that crashed before its rename leaves the old log.
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
}
