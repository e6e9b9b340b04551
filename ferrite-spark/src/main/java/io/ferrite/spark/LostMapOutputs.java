package io.ferrite.spark;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntFunction;
import org.apache.spark.FetchFailed;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import scala.Option;

/**
 * On the driver: when a task fails with a {@code FetchFailed} of a Ferrite shuffle, unregisters
 * every other map output of that shuffle whose File can no longer be read, so that Spark's next
 * attempt recomputes them all at once.
 *
 * <p>Why: a map output's location is its own ({@code ferrite-<taskAttemptId>}, see {@link
 * FerriteShuffleWriter}), so one {@code FetchFailed} unregisters one output. A lost memory server
 * takes every output with a block there; each reduce task reports only the first it meets, and
 * Spark aborts the job after {@code spark.stage.maxConsecutiveAttempts} (4) failed attempts of the
 * reduce stage — found by {@code FerriteShuffleServerLostTest} with 16 map outputs and 2 reducers
 * (the built-in shuffle has this in one step: its location is the executor, all of whose outputs a
 * FetchFailed drops).
 *
 * <p>Unreadable: the File is gone, or holds a block the master declared lost, or one whose every
 * copy is on a server the master calls DEAD. Cost: one status RPC and one lookup per map output of
 * the shuffle (plus a MAP per 1024 blocks past the first 8), once per stage attempt that fails, on
 * the listener bus thread. It races with Spark's resubmission of the failed stage (200 ms after the
 * failure): an output unregistered after it is recomputed at the next attempt.
 */
final class LostMapOutputs extends SparkListener {
  private static final System.Logger LOG = System.getLogger(LostMapOutputs.class.getName());

  private final Nodes nodes;
  private final IntFunction<String> shuffleDirs;

  /** (shuffle, stage, stage attempt) already swept: one sweep per failing stage attempt. */
  private final Set<List<Integer>> swept = ConcurrentHashMap.newKeySet();

  /**
   * @param shuffleDirs a Ferrite shuffle's Directory by shuffle id, null for one that is not (or no
   *     longer) registered here
   */
  LostMapOutputs(Nodes nodes, IntFunction<String> shuffleDirs) {
    this.nodes = nodes;
    this.shuffleDirs = shuffleDirs;
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    if (!(end.reason() instanceof FetchFailed f)) {
      return;
    }
    String dir = shuffleDirs.apply(f.shuffleId());
    if (dir == null || !swept.add(List.of(f.shuffleId(), end.stageId(), end.stageAttemptId()))) {
      return;
    }
    try {
      sweep(f.shuffleId(), dir);
    } catch (RuntimeException e) {
      // Spark's own handling of the FetchFailed goes on without this; never fail the bus.
      LOG.log(System.Logger.Level.WARNING, "could not look for lost map outputs", e);
    }
  }

  /** Unregisters the unreadable map outputs of {@code shuffleId}; returns how many. */
  int sweep(int shuffleId, String dir) {
    MapOutputTracker t = SparkEnv.get().mapOutputTracker();
    if (!(t instanceof MapOutputTrackerMaster master)) {
      return 0;
    }
    Option<ShuffleStatus> status = master.shuffleStatuses().get(shuffleId);
    if (status.isEmpty()) {
      return 0;
    }
    // A copy: the scheduler changes the array while this runs (it only nulls entries here).
    MapStatus[] statuses = status.get().mapStatuses().clone();
    Set<Integer> alive = new HashSet<>();
    for (ClusterStatus.Member m : nodes.client().status().members()) {
      if (m.info().state() != ServerState.DEAD) {
        alive.add(m.info().serverId());
      }
    }
    int unregistered = 0;
    for (int mapIndex = 0; mapIndex < statuses.length; mapIndex++) {
      MapStatus s = statuses[mapIndex];
      if (s == null) {
        continue;
      }
      String path = FerriteShuffleHandle.mapOutput(dir, mapIndex, s.mapId());
      if (unreadable(path, alive)) {
        master.unregisterMapOutput(shuffleId, mapIndex, s.location());
        unregistered++;
      }
    }
    if (unregistered > 0) {
      LOG.log(
          System.Logger.Level.INFO,
          "shuffle {0}: {1} map output(s) unreadable after a FetchFailed, unregistered to be"
              + " recomputed",
          shuffleId,
          unregistered);
    }
    return unregistered;
  }

  private boolean unreadable(String path, Set<Integer> alive) {
    NodeInfo info;
    try {
      info = nodes.lookup(path);
    } catch (NodesException e) {
      return e.reason() == NodesException.Reason.NOT_FOUND;
    }
    if (info.isLost()) {
      return true;
    }
    int r = info.replicas();
    List<BlockRef> refs = new ArrayList<>(info.blocks());
    int have = refs.size() / r;
    if (have < info.blockCount()) {
      refs.addAll(nodes.blocks(info, have, info.blockCount() - have));
    }
    for (int b = 0; b + r <= refs.size(); b += r) {
      boolean any = false;
      for (int k = 0; k < r && !any; k++) {
        any = alive.contains(refs.get(b + k).serverId());
      }
      if (!any) {
        return true;
      }
    }
    return false;
  }
}
