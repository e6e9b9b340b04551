package io.ferrite.cli;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.tao.Tao;
import io.ferrite.tx.tao.TaoWorkload;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ferrite tx tao}: loads a Tao graph ({@link TaoWorkload#load}) and runs TAO's read-heavy
 * mix on it ({@link TaoWorkload#run}); the two halves can run in separate processes through the ids
 * file.
 */
@Command(
    name = "tao",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Facebook's TAO graph store as FaRM builds it on its transactions (docs/TAO.md): objects and"
          + " association lists are tx objects; obj_get, assoc_count and assoc_range are lock-free"
          + " one-sided reads, updates are transactions.",
      "--load adds --objects objects and about --assocs associations per object (skewed: a few"
          + " objects have many), and writes their ids to --ids. --run reads --ids and runs the"
          + " TAO mix (99.8 %% reads) on --clients threads for --duration, then prints operations"
          + " per second, p50 and p99 latency, aborts and errors. Without --load or --run it does"
          + " both, and frees nothing: the graph stays for later --run calls."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite tx tao --objects 500 --assocs 4 --duration 1s      load, then run",
      "  ferrite tx tao --load --objects 500 --ids graph-ids.txt     load only",
      "  ferrite tx tao --run --clients 2 --duration 1s --ids graph-ids.txt",
      "",
      "Exit code 1 when an operation failed (the first error is printed)."
    })
final class TxTaoCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ClusterTarget target;

  @Option(names = "--load", description = "Only load the graph and write --ids.")
  boolean loadOnly;

  @Option(names = "--run", description = "Only run the mix on the graph named by --ids.")
  boolean runOnly;

  @Option(
      names = "--objects",
      paramLabel = "N",
      defaultValue = "10000",
      description = "Objects to load, >= 1 (default: 10000).")
  int objects;

  @Option(
      names = "--assocs",
      paramLabel = "N",
      defaultValue = "8",
      description = "Mean associations per object, >= 0 (default: 8).")
  int assocs;

  @Option(
      names = "--clients",
      paramLabel = "N",
      defaultValue = "4",
      description = "Threads running the mix, 1 to 1024 (default: 4).")
  int clients;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      defaultValue = "30s",
      converter = DurationConverter.class,
      description = "How long the mix runs, e.g. 10s (default: 30s).")
  Duration duration;

  @Option(
      names = "--ids",
      paramLabel = "FILE",
      defaultValue = "tao-ids.txt",
      description = "The loaded objects' ids, one per line (default: ./tao-ids.txt).")
  Path ids;

  @Option(names = "--seed", paramLabel = "N", description = "Seed (default: random, printed).")
  Long seed;

  private CommandLine.ParameterException invalid(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  @Override
  public Integer call() throws InterruptedException {
    if (loadOnly && runOnly) {
      throw invalid("--load and --run: give one, or neither to do both");
    }
    if (objects < 1 || assocs < 0) {
      throw invalid("--objects " + objects + ", --assocs " + assocs + " (expected: >= 1, >= 0)");
    }
    if (clients < 1 || clients > 1024) {
      throw invalid("--clients: " + clients + " (expected: 1 to 1024)");
    }
    if (duration.isNegative() || duration.isZero()) {
      throw invalid("--duration: " + duration.toMillis() + "ms (expected: > 0, e.g. 10s)");
    }
    if (runOnly && !Files.isRegularFile(ids)) {
      throw invalid("--ids " + ids + ": no such file (write it with --load first)");
    }
    List<FatPointer> loaded = runOnly ? readIds() : null; // bad lines: exit 2, nothing ran
    long s = seed != null ? seed : new Random().nextLong();
    return target.<Integer, InterruptedException>withClient(
        Role.CLIENT, "ferrite-tx-tao", false, c -> run(c, s, loaded));
  }

  private int run(FerriteClient client, long s, List<FatPointer> loaded)
      throws InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    Tao tao = new Tao(new TxClient(client));
    TaoWorkload w;
    if (loaded != null) {
      w = TaoWorkload.attach(tao, loaded);
      out.printf(Locale.ROOT, "%d objects from %s%n", w.ids().size(), ids);
    } else {
      out.printf(
          Locale.ROOT,
          "loading %d objects, about %d associations each, seed %d%n",
          objects,
          assocs,
          s);
      out.flush();
      long[] last = {System.nanoTime()};
      w =
          TaoWorkload.load(
              tao,
              objects,
              assocs,
              s,
              (done, total) -> {
                long now = System.nanoTime();
                if (now - last[0] >= 1_000_000_000L || done == total) {
                  last[0] = now;
                  out.printf(
                      Locale.ROOT,
                      "  loaded %,d of %,d adds (%.0f%%)%n",
                      done,
                      total,
                      100.0 * done / total);
                  out.flush();
                }
              });
      writeIds(w.ids());
      out.printf(Locale.ROOT, "ids of %d objects in %s%n", w.ids().size(), ids);
      if (loadOnly) {
        return 0;
      }
    }
    out.printf(
        Locale.ROOT,
        "running the TAO mix (%.1f %% reads) on %d client(s) for %s%n",
        100 * (1 - TaoWorkload.WRITE_FRACTION),
        clients,
        duration);
    out.flush();
    TaoWorkload.Result r = w.run(clients, duration, s);
    out.println(r);
    out.flush();
    return r.errors() == 0 ? 0 : 1;
  }

  private List<FatPointer> readIds() {
    List<FatPointer> out = new ArrayList<>();
    try {
      int line = 0;
      for (String l : Files.readAllLines(ids, StandardCharsets.UTF_8)) {
        line++;
        if (l.isBlank()) {
          continue;
        }
        try {
          out.add(Tao.parseId(l.trim()));
        } catch (FerriteException e) {
          throw invalid("--ids " + ids + ", line " + line + ": " + e.getMessage());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading --ids " + ids, e);
    }
    if (out.isEmpty()) {
      throw invalid("--ids " + ids + ": no ids in it (write it with --load first)");
    }
    return out;
  }

  private void writeIds(List<FatPointer> list) {
    StringBuilder b = new StringBuilder();
    for (FatPointer p : list) {
      b.append(Tao.idString(p)).append('\n');
    }
    try {
      Files.writeString(ids, b, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("writing --ids " + ids, e);
    }
  }
}
