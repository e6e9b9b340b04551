package io.ferrite.cli.bench;

import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options that several {@code bench} suites declare alike, each a picocli mixin of its own: a
 * suite lists its options in the order it declares them ({@code sortOptions = false}), so each
 * shared option is mixed in where it stands in that suite's list. An option whose description names
 * a suite's own default ({@code --duration}, {@code --iterations}, ...) stays with the suite.
 */
public final class BenchOptions {
  private BenchOptions() {}

  /** {@code --fabrics}: the client fabrics a face's suite drives, shm and tcp. */
  public static final class ClientFabrics {
    static final List<String> ALL = List.of("shm", "tcp");

    @Option(
        names = "--fabrics",
        split = ",",
        paramLabel = "NAME",
        description = "Client fabrics, comma-separated: shm, tcp (default: shm,tcp).")
    List<String> fabrics;

    /** The fabrics given, each checked to be shm or tcp; null when the option was not given. */
    List<String> given(BenchOutput out) {
      if (fabrics != null) {
        out.checkFabrics(fabrics, ALL);
      }
      return fabrics;
    }
  }

  /** {@code --threads}: the client thread counts a face's suite runs each case with. */
  public static final class ClientThreads {
    @Option(
        names = "--threads",
        split = ",",
        paramLabel = "N",
        description = "Client thread counts (default: 1,16).")
    List<Integer> threads;

    /** The thread counts given; null when the option was not given. */
    List<Integer> given() {
      return threads;
    }
  }

  /** {@code --servers}: the memory servers of the local cluster a suite starts in its process. */
  public static final class Servers {
    @Option(
        names = "--servers",
        paramLabel = "N",
        description = "Memory servers of the local cluster, 1 to 16 (default: 2).")
    Integer servers;

    /** The count given, else {@code suiteDefault}. */
    int or(int suiteDefault) {
      return servers != null ? servers : suiteDefault;
    }
  }

  /** {@code --depth}: 1 MiB ops a suite's 1 MiB bandwidth measurements keep in flight. */
  public static final class Depth {
    @Option(
        names = "--depth",
        paramLabel = "N",
        description = "1 MiB ops in flight in the 1 MiB bandwidth measurements (default: 4).")
    Integer depth;

    /** The depth given, else {@code suiteDefault}. */
    int or(int suiteDefault) {
      return depth != null ? depth : suiteDefault;
    }
  }
}
