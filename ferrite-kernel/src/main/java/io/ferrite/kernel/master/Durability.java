package io.ferrite.kernel.master;

import io.ferrite.fabric.FerriteException;
import java.util.concurrent.CompletableFuture;

/**
 * Where the master's mutations become durable, numbered by LSN: the local {@link Journal} (a single
 * master: durable = fsynced by its group commit) or a {@link RaftJournal} (a master group's leader:
 * durable = committed by Raft, that is on the disks of a majority). {@link MasterService} holds
 * every answer until {@link #durableLsn} reaches what was written when its handler completed; the
 * same "answer after durability" rule serves both.
 *
 * <p>Both LSNs only grow; {@code durableLsn() <= writtenLsn()}. Thread-safe; nothing blocks.
 */
interface Durability {
  /** LSN of the last record written (appended, or submitted to Raft); 0: none since open. */
  long writtenLsn();

  /** LSN up to which every record is durable. */
  long durableLsn();

  /**
   * Completes once every record up to {@code lsn} is durable; fails if that can no longer happen
   * (an fsync failed, the journal closed, the leader lost its leadership).
   */
  CompletableFuture<Void> whenDurable(long lsn);

  /** The failure that stopped it for good, or null. */
  FerriteException failure();
}
