package io.ferrite.cli;

import picocli.CommandLine.Command;

/** {@code ferrite tx ...}: the tx face (FaRM transactions) for a person at a terminal. */
@Command(
    name = "tx",
    mixinStandardHelpOptions = true,
    description = {
      "Transactions after FaRM: objects in a shared address space spread over the memory servers,"
          + " read with one-sided reads and committed with optimistic concurrency control and"
          + " two-phase commit (strictly serializable), and lock-free reads of single objects.",
      "The subcommands run workloads on the face and check what it promises; see docs/TX.md."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite local &                 a cluster on this machine (writes its file)",
      "  ferrite tx bank --duration 2s   4 clients, 1000 accounts, then the check",
      "  ferrite tx bank --accounts 20 --clients 8 --duration 2s   many aborts",
      "  ferrite tx tao --objects 500 --duration 1s   a Tao graph, then its read mix",
      "  ferrite bench tx --quick        the face's latencies and throughput"
    },
    subcommands = {TxBankCommand.class, TxTaoCommand.class})
final class TxCommand extends CommandGroup {}
