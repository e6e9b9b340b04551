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

  @Test
  void whatYcsbWouldIgnoreIsRefusedClearly(@TempDir Path dir) throws Exception {
    assertEquals(1, run("ycsb", "b", "-p", "readproprtion=0.9"));
    assertTrue(err.toString().contains("unknown property 'readproprtion'"), err.toString());

    err.getBuffer().setLength(0);
    Path w = dir.resolve("rest");
    Files.writeString(w, "workload=site.ycsb.workloads.RestWorkload\n");
    assertEquals(1, run("ycsb", "-P", w.toString()));
    assertTrue(
        err.toString().contains("runs site.ycsb.workloads.CoreWorkload only"), err.toString());

    err.getBuffer().setLength(0);
    assertEquals(1, run("ycsb", "a", "-db", "site.ycsb.BasicDB"));
    assertTrue(err.toString().contains("FerriteKvDb only"), err.toString());

    err.getBuffer().setLength(0);
    assertEquals(1, run("ycsb"));
    assertTrue(err.toString().contains("no workload"), err.toString());

    err.getBuffer().setLength(0);
    assertEquals(1, run("ycsb", "a", "-load", "-t"));
    assertTrue(err.toString().contains("one phase at a time"), err.toString());

    err.getBuffer().setLength(0);
    assertEquals(2, run("ycsb", "a", "-threds", "4"));
  }
}
