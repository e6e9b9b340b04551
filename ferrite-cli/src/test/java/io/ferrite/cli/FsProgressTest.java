package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

/** fs put/get progress: a bar on a terminal, lines otherwise, nothing for small transfers. */
class FsProgressTest {
  static final long MIB = 1L << 20;

  @Test
  void offATerminalALongCopyPrintsLinesWithBytesAndRate() {
    StringWriter w = new StringWriter();
    // Interval 0: a line on every add, standing in for "every 5 s" without waiting.
    FsCommands.Progress p =
        new FsCommands.Progress(new PrintWriter(w), "ferrite fs put /x", 8 * MIB, false, 0);
    p.add(2 * MIB);
    p.add(6 * MIB);
    p.finish();
    List<String> lines = w.toString().lines().toList();
    assertEquals(2, lines.size(), w.toString());
    assertTrue(lines.get(0).startsWith("ferrite fs put /x: 2 MiB of 8 MiB (25%), "), lines.get(0));
    assertTrue(
        lines.get(1).contains("8 MiB of 8 MiB (100%)") && lines.get(1).endsWith("/s"),
        lines.get(1));
    assertTrue(!w.toString().contains("\r"), "no bar off a terminal");
  }

  @Test
  void onATerminalABarAndOfUnknownSizeLinesAndSmallNothing() {
    StringWriter bar = new StringWriter();
    FsCommands.Progress p = new FsCommands.Progress(new PrintWriter(bar), "put", 8 * MIB, true, 0);
    p.add(8 * MIB);
    p.finish();
    assertTrue(bar.toString().startsWith("\r[###"), bar.toString());

    StringWriter stdin = new StringWriter();
    FsCommands.Progress s = new FsCommands.Progress(new PrintWriter(stdin), "put -", -1, false, 0);
    s.add(MIB);
    assertTrue(stdin.toString().startsWith("put -: 1 MiB, "), stdin.toString());

    StringWriter small = new StringWriter();
    FsCommands.Progress t = new FsCommands.Progress(new PrintWriter(small), "put", MIB, true, 0);
    t.add(MIB);
    t.finish();
    assertEquals("", small.toString());
  }
}
