package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Frames;
import io.ferrite.fabric.RpcHandler;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * 200 bad connections (half send a frame too long to read, half a HELLO for another cluster) cost a
 * few WARNING lines, not 200: one per cause per 10 s, and the server's close logs how many were
 * left out. Every refusal is accounted for, in a full line or a count.
 */
class TcpRefusalLogTest extends TcpTestSupport {
  private static final Pattern COUNT = Pattern.compile("refused or closed (\\d+) more connection");
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Logger jul = Logger.getLogger("io.ferrite.fabric");
  private Level before;
  private final Handler capture =
      new Handler() {
        @Override
        public void publish(LogRecord r) {
          if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
            records.add(r);
          }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };

  @BeforeEach
  void setUp() throws Exception {
    before = jul.getLevel();
    jul.setLevel(Level.INFO);
    jul.addHandler(capture);
    start(RpcHandler.none(), 2, 16);
  }

  @AfterEach
  void detach() {
    jul.removeHandler(capture);
    jul.setLevel(before);
  }

  /** A well-formed HELLO for another cluster: refused by the handshake, not the frame reader. */
  private static byte[] helloOfAnotherCluster() {
    byte[] id = "another-cluster".getBytes(StandardCharsets.UTF_8);
    // magic u32 | version u16 | idLen u16 | clusterId | clientNonce 16 B | role u8 | check 32 B
    ByteBuffer b = ByteBuffer.allocate(8 + id.length + 16 + 1 + 32).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(Frames.MAGIC).putShort((short) Frames.PROTOCOL_VERSION).putShort((short) id.length);
    b.put(id);
    return RawClient.frame(Frames.TYPE_HELLO, 0, 0, 1, b.array());
  }

  @Test
  void twoHundredBadConnectionsCostAFewLines() throws Exception {
    byte[] tooLong = {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 1, 0, 0, 0};
    byte[] hello = helloOfAnotherCluster();
    for (int i = 0; i < 200; i++) {
      try (RawClient c = new RawClient(RawClient.addressOf(server.address()))) {
        c.send(i % 2 == 0 ? tooLong : hello);
        assertTrue(c.closedByServer(), where() + ": connection " + i + " was not closed");
      }
    }
    assertStillServes();
    server.close(); // ends the windows: their counts are logged now
    long full = 0;
    long counted = 0;
    for (LogRecord r : records) {
      Matcher m = COUNT.matcher(r.getMessage());
      if (m.find()) {
        counted += Long.parseLong(m.group(1));
      } else {
        full++;
      }
    }
    List<String> messages = records.stream().map(LogRecord::getMessage).toList();
    assertEquals(200, full + counted, "every refusal in a line or a count: " + messages);
    // Two causes: a full line and a count each per 10 s window. Ten lines would take 200
    // connections more than 20 s.
    assertTrue(records.size() <= 10, records.size() + " lines: " + messages);
    assertTrue(full >= 2, "each cause logged in full once: " + messages);
  }
}
