package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code ferrite ycsb} takes YCSB's own flags and refuses what YCSB would silently ignore. The
 * arguments it hands YCSB's Client are checked without running it (Client.main exits the JVM).
 */
class YcsbCommandTest extends CliCapture {
  static List<String> args(String... argv) throws Exception {
    CommandLine cli = FerriteCli.commandLine();
    CommandLine.ParseResult parsed = cli.parseArgs(argv);
    YcsbCommand c = (YcsbCommand) parsed.subcommand().commandSpec().userObject();
    return c.clientArgs();
  }

  @Test
  void ycsbsOwnFlagsAreTakenAsYcsbTakesThem(@TempDir Path dir) throws Exception {
    List<String> a = args("ycsb", "b", "-threads", "4", "-target", "1000", "-s", "-t");
    assertEquals("-t", a.get(0));
    assertTrue(String.join(" ", a).contains("-threads 4 -target 1000 -s"), a.toString());
    assertTrue(a.get(a.indexOf("-P") + 1).contains("workloadb"), a.toString());

    Path w = dir.resolve("mine");
    Files.writeString(
        w,
        "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=500\nreadproportion=1\n"
            + "threadcount=3\nferrite.fabric=tcp\n");
    List<String> own = args("ycsb", "-P", w.toString(), "-load", "-p", "operationcount=10");
    assertEquals("-load", own.get(0));
    assertEquals(List.of("-P", w.toString()), own.subList(3, 5));
    assertTrue(!own.contains("-threads"), "the file's threadcount stands: " + own);
    assertEquals(List.of("-p", "operationcount=10"), own.subList(own.size() - 2, own.size()));

    List<String> ours = args("ycsb", "a", "--load", "--threads", "2");
    assertEquals("-load", ours.get(0));
    assertTrue(String.join(" ", ours).contains("-threads 2"), ours.toString());
  }

  /**
   * Checked through clientArgs, never through a run: a refusal that regressed must fail here, not
   * reach YCSB's Client.main, which exits the JVM (and would look for a cluster).
   */
  @Test
  void whatYcsbWouldIgnoreIsRefusedClearly(@TempDir Path dir) throws Exception {
    assertRefused("unknown property 'readproprtion'", "ycsb", "b", "-p", "readproprtion=0.9");
    Path w = dir.resolve("rest");
    Files.writeString(w, "workload=site.ycsb.workloads.RestWorkload\n");
    assertRefused("runs site.ycsb.workloads.CoreWorkload only", "ycsb", "-P", w.toString());
    assertRefused("FerriteKvDb only", "ycsb", "a", "-db", "site.ycsb.BasicDB");
    assertRefused("no workload", "ycsb");
    assertRefused("one phase at a time", "ycsb", "a", "-load", "-t");
    assertRefused("-threads: 0", "ycsb", "a", "-threads", "0");
    assertRefused("no such readable file", "ycsb", "-P", dir.resolve("nope").toString());

    // A misspelt flag is a usage error at parse time (exit 2), before anything runs.
    assertEquals(2, run("ycsb", "a", "-threds", "4"));
    assertTrue(err.toString().contains("-threds"), err.toString());
  }

  private static void assertRefused(String why, String... argv) {
    IllegalArgumentException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> args(argv));
    assertTrue(e.getMessage().contains(why), e.getMessage());
  }
}
