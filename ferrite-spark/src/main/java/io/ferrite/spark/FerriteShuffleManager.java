package io.ferrite.spark;

import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.MergedBlockMeta;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleMergedBlockId;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * Spark's shuffle over the nodes face ({@code
 * spark.shuffle.manager=io.ferrite.spark.FerriteShuffleManager}; keys in {@link FerriteSparkConf},
 * usage in docs/SPARK.md). Layout, after NodeKernel §5 with one File per map <em>attempt</em>:
 *
 * <pre>
 *   &lt;root&gt;/&lt;appId&gt;/shuffle-&lt;id&gt;/map-&lt;mapIndex&gt;-&lt;taskAttemptId&gt;   (Directory/Directory/File)
 * </pre>
 *
 * The driver makes the application's Directory ephemeral (the master removes it when the driver's
 * session ends, so a driver that dies leaves nothing after its lease), makes a shuffle's Directory
 * at {@link #registerShuffle} and removes it at {@link #unregisterShuffle} (unless {@code
 * spark.ferrite.shuffle.deleteOnUnregister=false}), and the application's Directory at {@link
 * #stop}. Each JVM (driver, executor) holds one Ferrite client, connected at first use and closed
 * at {@link #stop}. Thread-safe: tasks of one executor share it.
 */
public final class FerriteShuffleManager implements ShuffleManager {
  private final SparkConf sparkConf;
  private final boolean isDriver;
  private final Map<Integer, String> shuffles = new ConcurrentHashMap<>();
  private final ShuffleBlockResolver resolver = new NoBlocks();
  private FerriteSparkConf conf;
  private FerriteClient client;
  private Nodes nodes;
  private String appDir;
  private boolean stopped;

  public FerriteShuffleManager(SparkConf conf, boolean isDriver) {
    this.sparkConf = conf;
    this.isDriver = isDriver;
    if (isDriver) {
      // Read by the SparkContext after it made this manager (SparkEnv first): map outputs survive
      // an executor, so a lost executor's finished map tasks are not run again
      // (FerriteShuffleDataIO).
      conf.setIfMissing(FerriteShuffleDataIO.KEY, FerriteShuffleDataIO.class.getName());
    }
  }

  /** The keys, read at first use: the driver's SparkConf has no app id yet at construction. */
  synchronized FerriteSparkConf conf() {
    if (conf == null) {
      conf = FerriteSparkConf.from(sparkConf, System.getenv());
    }
    return conf;
  }

  /** This JVM's nodes-face client, connected at first use. */
  synchronized Nodes nodes() {
    if (stopped) {
      throw new IllegalStateException("the Ferrite shuffle manager is stopped");
    }
    if (nodes == null) {
      FerriteSparkConf c = conf();
      client = Ferrite.connect(c.master(), c.options());
      nodes = new Nodes(client);
    }
    return nodes;
  }

  /**
   * The application's Directory ({@code <root>/<appId>}), named at first use and removed by the
   * driver's {@link #stop}; {@link FerriteBroadcast} puts its Files there too.
   */
  synchronized String appDir() {
    if (appDir == null) {
      String d = conf().appDir(sparkConf.getAppId());
      makeAppDir(d);
      appDir = d;
      // Every output a lost server took, recomputed in one attempt (see LostMapOutputs).
      org.apache.spark.SparkContext$.MODULE$
          .getActive()
          .foreach(
              sc -> {
                sc.addSparkListener(new LostMapOutputs(nodes(), shuffles::get));
                return null;
              });
    }
    return appDir;
  }

  @Override
  public <K, V, C> ShuffleHandle registerShuffle(int shuffleId, ShuffleDependency<K, V, C> dep) {
    String dir = appDir() + "/shuffle-" + shuffleId;
    nodes().mkdirs(dir);
    shuffles.put(shuffleId, dir);
    return new FerriteShuffleHandle<>(shuffleId, dep, dir);
  }

  @Override
  @SuppressWarnings("unchecked")
  public <K, V> ShuffleWriter<K, V> getWriter(
      ShuffleHandle handle, long mapId, TaskContext context, ShuffleWriteMetricsReporter metrics) {
    try {
      return new FerriteShuffleWriter<>(
          (FerriteShuffleHandle<K, V, Object>) handle,
          mapId,
          context,
          metrics,
          nodes(),
          conf().storageClass());
    } catch (org.apache.spark.SparkException e) {
      // Only the serialized writer throws, for a shuffle it cannot take: canUseSerializedShuffle
      // checked that first, as SortShuffleManager does.
      throw new IllegalStateException(e);
    }
  }

  @Override
  @SuppressWarnings("unchecked")
  public <K, C> ShuffleReader<K, C> getReader(
      ShuffleHandle handle,
      int startMapIndex,
      int endMapIndex,
      int startPartition,
      int endPartition,
      TaskContext context,
      ShuffleReadMetricsReporter metrics) {
    return new FerriteShuffleReader<>(
        (FerriteShuffleHandle<K, ?, C>) handle,
        startMapIndex,
        endMapIndex,
        startPartition,
        endPartition,
        context,
        metrics,
        nodes(),
        conf().prefetch());
  }

  /**
   * Forgets the shuffle; on the driver also removes its Directory with every map output in it
   * (executors are told too, by the BlockManager: one removal is enough, the driver's).
   */
  @Override
  public boolean unregisterShuffle(int shuffleId) {
    String dir = shuffles.remove(shuffleId);
    if (dir != null && isDriver && conf().deleteOnUnregister()) {
      removeIfThere(dir);
    }
    return true;
  }

  @Override
  public ShuffleBlockResolver shuffleBlockResolver() {
    return resolver;
  }

  /** On the driver removes the application's Directory; closes this JVM's client. */
  @Override
  public void stop() {
    synchronized (this) {
      if (stopped) {
        return;
      }
      try {
        if (isDriver && appDir != null && nodes != null) {
          removeIfThere(appDir);
        }
      } finally {
        stopped = true;
        shuffles.clear();
        if (client != null) {
          client.close();
        }
      }
    }
  }

  /**
   * Makes the application's Directory ephemeral, owned by this driver's session: if the driver dies
   * (SIGKILL, a lost host) and never reaches {@link #stop}, the master removes it with every map
   * output in it once the session's lease runs out (the master's {@code session.lease}, 10 s by
   * default; docs/NODES.md, "Ephemeral directories"). One left by an earlier driver with the same
   * application id is used as it is.
   */
  private void makeAppDir(String d) {
    Nodes n = nodes();
    int slash = d.lastIndexOf('/');
    if (slash > 0) {
      n.mkdirs(d.substring(0, slash));
    }
    try {
      n.mkdirEphemeral(d);
    } catch (NodesException e) {
      if (e.reason() != NodesException.Reason.ALREADY_EXISTS) {
        throw e;
      }
    }
  }

  private void removeIfThere(String dir) {
    try {
      nodes().remove(dir, true);
    } catch (NodesException e) {
      if (e.reason() != NodesException.Reason.NOT_FOUND) {
        throw e;
      }
    }
  }

  /**
   * Ferrite's map outputs are read from the nodes face by the reducers themselves, never served by
   * a BlockManager: a request for one here is a bug (or push-based shuffle, which is off).
   */
  private static final class NoBlocks implements ShuffleBlockResolver {
    @Override
    public ManagedBuffer getBlockData(BlockId blockId, Option<String[]> dirs) {
      throw new UnsupportedOperationException(
          blockId + ": Ferrite shuffle blocks are read from the nodes face, not a BlockManager");
    }

    @Override
    public Seq<ManagedBuffer> getMergedBlockData(
        ShuffleMergedBlockId blockId, Option<String[]> dirs) {
      throw new UnsupportedOperationException(blockId + ": no push-based shuffle over Ferrite");
    }

    @Override
    public MergedBlockMeta getMergedBlockMeta(ShuffleMergedBlockId blockId, Option<String[]> dirs) {
      throw new UnsupportedOperationException(blockId + ": no push-based shuffle over Ferrite");
    }

    @Override
    public void stop() {}
  }
}
