package io.ferrite.kv.server;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;

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

/** The log's recovery: intact records replay in order; a torn or corrupt tail is cut off. */
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
}
