package io.ferrite.spark;

import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockResult;
import org.apache.spark.storage.BroadcastBlockId;
import org.apache.spark.storage.StorageLevel;
import scala.Option;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * A read-only value shipped to executors through the nodes face, used instead of {@code
 * sc.broadcast(v)} (Spark's broadcast factory is not pluggable since 2.0, so Crail's patched-Spark
 * route is closed: integrations anchor). Needs {@code
 * spark.shuffle.manager=io.ferrite.spark.FerriteShuffleManager}: it shares that manager's client
 * and application Directory, so the application's end removes its Files with the shuffles'.
 *
 * <pre>
 *   driver:   create(sc, v) -- Spark's serializer (SparkEnv's: Kryo settings apply), once -->
 *             File &lt;root&gt;/&lt;appId&gt;/broadcast-&lt;n&gt;
 *   executor: value() -- first task of the JVM reads the File (streamed, several blocks in flight),
 *             deserializes, keeps it in the BlockManager as BroadcastBlockId(id) --> other tasks
 * </pre>
 *
 * The handle is what a closure captures: Serializable, a few fields (id, path, size). The value is
 * kept per executor JVM in Spark's BlockManager ({@code MEMORY_AND_DISK}, not reported to the
 * master, as {@code TorrentBroadcast} does), so it is counted in Spark's storage memory and {@link
 * #unpersist} reaches every executor through Spark's own {@code RemoveBroadcast} message. Ids come
 * from a range Spark's own broadcasts (counted from 0) never reach. The value is not compressed: it
 * lives in memory-tier blocks, and compressing it would cost every reading executor CPU.
 *
 * <p>Thread-safe: tasks of one executor share one read ({@link #value} waits for it).
 */
public final class FerriteBroadcast<T> implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Ids of Ferrite's broadcasts: far above Spark's own, which count up from 0 per application. */
  static final long FIRST_ID = 1L << 60;

  private static final AtomicLong NEXT = new AtomicLong();

  /**
   * Per JVM: one lock per broadcast, so concurrent tasks read its File once. Never emptied (an
   * executor is not told of a destroy): a few dozen bytes per broadcast the JVM has seen.
   */
  private static final ConcurrentHashMap<Long, Object> LOCKS = new ConcurrentHashMap<>();

  /** Per JVM: reads of broadcast Files (tests check one per JVM). */
  private static final AtomicLong FILE_READS = new AtomicLong();

  private static final ClassTag<Object> ANY = ClassTag$.MODULE$.AnyRef();

  private final long id;
  private final String path;
  private final long size;

  /** Only on the driver's handle: the value it was made from (tasks get a copy without it). */
  private transient T driverValue;

  private transient boolean destroyed;

  private FerriteBroadcast(long id, String path, long size, T driverValue) {
    this.id = id;
    this.path = path;
    this.size = size;
    this.driverValue = driverValue;
  }

  /** For Java: writes {@code value} once to a File and returns the handle tasks capture. */
  public static <T> FerriteBroadcast<T> create(JavaSparkContext jsc, T value) {
    return create(jsc.sc(), value);
  }

  /**
   * Serializes {@code value} once with the application's serializer into a new File under the
   * application's Directory and returns its handle.
   *
   * @throws IllegalStateException when the shuffle manager is not Ferrite's, or the File cannot be
   *     written (the cluster unreachable, out of memory): the cause is attached and named
   */
  public static <T> FerriteBroadcast<T> create(SparkContext sc, T value) {
    FerriteShuffleManager manager = manager(SparkEnv.get(), "create");
    long id = FIRST_ID + NEXT.getAndIncrement();
    // In the application's Directory (the conf names it, as the manager's appDir()).
    String path = manager.conf().appDir(sc.getConf().getAppId()) + "/broadcast-" + (id - FIRST_ID);
    long size;
    try {
      // The manager makes that Directory at first use (ephemeral: the driver's session owns it),
      // inside this try so that a cluster out of reach is named.
      manager.appDir();
      Nodes nodes = manager.nodes();
      NodeWriter writer = nodes.create(path);
      CountingOutputStream out = new CountingOutputStream(writer.outputStream());
      boolean written = false;
      try {
        SerializationStream s = SparkEnv.get().serializer().newInstance().serializeStream(out);
        s.writeObject(value, ANY);
        // Closing the serializer closes the File's stream: that publishes the File.
        s.close();
        written = true;
      } finally {
        if (!written) {
          writer.abort();
        }
      }
      size = out.count;
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          "FerriteBroadcast "
              + id
              + ": writing "
              + path
              + " to the Ferrite cluster "
              + manager.conf().master()
              + " failed: "
              + e,
          e);
    }
    return new FerriteBroadcast<>(id, path, size, value);
  }

  /** Spark's id of this broadcast's block on each executor ({@code broadcast_<id>}). */
  public long id() {
    return id;
  }

  /** The File holding the serialized value. */
  public String path() {
    return path;
  }

  /** Bytes of the serialized value. */
  public long size() {
    return size;
  }

  /**
   * The value: on the driver the object it was made from; in a task, the JVM's copy, read from the
   * File by the first task that asks (the others wait for that read).
   *
   * @throws IllegalStateException after {@link #destroy}, or when the File is gone or unreadable,
   *     naming this broadcast and its path
   */
  @SuppressWarnings("unchecked")
  public T value() {
    if (destroyed) {
      throw new IllegalStateException(this + " was destroyed: its value cannot be read");
    }
    if (driverValue != null) {
      return driverValue;
    }
    SparkEnv env = SparkEnv.get();
    BlockManager bm = env.blockManager();
    BlockId block = BroadcastBlockId.apply(id, "");
    synchronized (LOCKS.computeIfAbsent(id, k -> new Object())) {
      Option<BlockResult> cached = bm.getLocalValues(block);
      if (cached.isDefined()) {
        Object v = cached.get().data().next();
        release(bm, block);
        return (T) v;
      }
      Object v = read(manager(env, "value").nodes());
      // tellMaster = false: the master need not know (unpersist reaches every executor anyway).
      if (!bm.putSingle(block, v, StorageLevel.MEMORY_AND_DISK(), false, ANY)) {
        throw new IllegalStateException(this + ": the BlockManager refused its value");
      }
      return (T) v;
    }
  }

  private Object read(Nodes nodes) {
    FILE_READS.incrementAndGet();
    try {
      NodeReader reader = nodes.open(path);
      if (reader.size() != size) {
        throw new IllegalStateException(
            this + ": the File holds " + reader.size() + " B (expected: " + size + " B)");
      }
      // 1 MiB reads, 8 in flight: over tcp the transfers overlap; over shm each is a copy.
      try (InputStream in = reader.inputStream(1 << 20, 8);
          DeserializationStream d =
              SparkEnv.get().serializer().newInstance().deserializeStream(in)) {
        return d.readObject(ANY);
      }
    } catch (NodesException e) {
      if (e.reason() == NodesException.Reason.NOT_FOUND) {
        throw new IllegalStateException(
            this + ": its File is gone (destroyed, or the application ended)", e);
      }
      throw new IllegalStateException(this + ": reading its File failed: " + e, e);
    } catch (IOException e) {
      throw new IllegalStateException(this + ": reading its File failed: " + e, e);
    }
  }

  /**
   * Drops the executors' copies (they read the File again if asked); best effort and asynchronous,
   * like Spark's {@code Broadcast.unpersist()}. The File stays.
   */
  public void unpersist() {
    unpersist(false);
  }

  /** As {@link #unpersist()}; {@code blocking} waits until every executor has dropped its copy. */
  public void unpersist(boolean blocking) {
    SparkEnv.get().blockManager().master().removeBroadcast(id, true, blocking);
  }

  /**
   * Drops the executors' copies (waiting for them) and removes the File: reads after this fail.
   * Only on the driver.
   */
  public void destroy() {
    destroyed = true;
    driverValue = null;
    unpersist(true);
    try {
      manager(SparkEnv.get(), "destroy").nodes().remove(path, false);
    } catch (NodesException e) {
      if (e.reason() != NodesException.Reason.NOT_FOUND) {
        throw new IllegalStateException(this + ": removing its File failed: " + e, e);
      }
    }
  }

  @Override
  public String toString() {
    return "FerriteBroadcast(" + id + ", " + path + ")";
  }

  static long fileReads() {
    return FILE_READS.get();
  }

  /**
   * Spark's lock on a block read by getLocalValues is the task's: released at the task's end (as
   * TorrentBroadcast does), or now outside a task (the driver).
   */
  private static void release(BlockManager bm, BlockId block) {
    TaskContext task = TaskContext.get();
    if (task == null) {
      bm.releaseLock(block, Option.empty());
    } else {
      task.addTaskCompletionListener(
          (org.apache.spark.util.TaskCompletionListener)
              t -> bm.releaseLock(block, Option.apply(t)));
    }
  }

  private static FerriteShuffleManager manager(SparkEnv env, String what) {
    if (env == null) {
      throw new IllegalStateException("FerriteBroadcast." + what + ": no SparkEnv in this JVM");
    }
    ShuffleManager m = env.shuffleManager();
    if (!(m instanceof FerriteShuffleManager)) {
      throw new IllegalStateException(
          "FerriteBroadcast needs spark.shuffle.manager="
              + FerriteShuffleManager.class.getName()
              + " (it shares its Ferrite client and application Directory); this application's is "
              + (m == null ? "none" : m.getClass().getName()));
    }
    return (FerriteShuffleManager) m;
  }

  /**
   * Counts the serialized bytes on their way into the File (its size, without a lookup), and keeps
   * the serializer's flushes from the File: Kryo's {@code Output} flushes its stream each time its
   * 4 KiB buffer fills, and the File's stream takes a flush as "publish what is written" (drain the
   * writes in flight, then a call to the master): 65536 of them for 256 MiB took 37 s where the
   * bytes alone take under a second. Only {@code close} publishes.
   */
  private static final class CountingOutputStream extends java.io.FilterOutputStream {
    long count;

    CountingOutputStream(OutputStream out) {
      super(out);
    }

    @Override
    public void flush() {
      // Deliberately nothing: see above.
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      count++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      count += len;
    }
  }
}
