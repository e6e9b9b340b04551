package io.ferrite.spark;

import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.api.ShuffleMapOutputWriter;
import org.apache.spark.shuffle.api.ShufflePartitionWriter;
import org.apache.spark.shuffle.api.metadata.MapOutputCommitMessage;

/**
 * One map attempt's output as one File in the nodes face, written by Spark's {@code
 * ExternalSorter.writePartitionedMapOutput} (so records are serialized, compressed and encrypted as
 * Spark's own shuffle does) and ended by an index of partition offsets:
 *
 * <pre>
 *   0                                                      size - 8(n+1)          size
 *   +-------------+-------------+-----+-----------------+--------+--------+-----+--------+
 *   | partition 0 | partition 1 | ... | partition n - 1 | off[0] | off[1] | ... | off[n] |
 *   +-------------+-------------+-----+-----------------+--------+--------+-----+--------+
 *   off[p] = where partition p starts (off[0] = 0, off[n] = size - 8(n+1)), 8 B big-endian each
 * </pre>
 *
 * The index lives in the File (not only in the MapStatus) because Spark reports approximate sizes
 * for shuffles of more than 2000 partitions ({@code HighlyCompressedMapStatus}); a reducer reads
 * the n+1 offsets it needs, then its byte range. The File is invisible until {@link
 * #commitAllPartitions} publishes it, and an attempt that fails is {@link #abort}ed (dropped with
 * its blocks): a reader never sees a partial output. Not thread-safe (one map task).
 */
final class MapOutputFile implements ShuffleMapOutputWriter {
  private final Nodes nodes;
  private final String path;
  private final CreateOptions options;
  private final ShuffleWriteMetricsReporter metrics;
  private final long[] lengths;
  private NodeWriter writer;
  private OutputStream out;
  private long position;
  private int lastPartition = -1;

  MapOutputFile(
      Nodes nodes,
      String path,
      int partitions,
      String storageClass,
      ShuffleWriteMetricsReporter metrics) {
    this.nodes = nodes;
    this.path = path;
    this.options = CreateOptions.inClass(storageClass);
    this.metrics = metrics;
    this.lengths = new long[partitions];
  }

  private OutputStream out() throws IOException {
    if (out == null) {
      long t0 = System.nanoTime();
      try {
        writer = create();
      } catch (NodesException e) {
        throw new IOException("creating map output " + path, e);
      }
      out = writer.outputStream();
      metrics.incWriteTime(System.nanoTime() - t0);
    }
    return out;
  }

  /**
   * Creates the File; if the shuffle's directory is missing (the driver makes it at
   * registerShuffle, but a driver on another cluster view or a removed directory must not fail the
   * task with a riddle) it is made first — but never the application's: that one is the driver's
   * ephemeral Directory, and one missing means the driver is gone (made again here it would outlive
   * the application).
   */
  private NodeWriter create() {
    try {
      return nodes.create(path, options);
    } catch (NodesException e) {
      if (e.reason() != NodesException.Reason.NOT_FOUND) {
        throw e;
      }
      try {
        nodes.mkdir(path.substring(0, path.lastIndexOf('/')));
      } catch (NodesException again) {
        if (again.reason() != NodesException.Reason.ALREADY_EXISTS) {
          throw again;
        }
      }
      return nodes.create(path, options);
    }
  }

  @Override
  public ShufflePartitionWriter getPartitionWriter(int partition) throws IOException {
    if (partition <= lastPartition || partition >= lengths.length) {
      throw new IllegalArgumentException(
          "partition: "
              + partition
              + " (expected: > "
              + lastPartition
              + " and < "
              + lengths.length
              + ": partitions are written once, in order)");
    }
    lastPartition = partition;
    OutputStream file = out();
    return new PartitionWriter(partition, file);
  }

  @Override
  public MapOutputCommitMessage commitAllPartitions(long[] checksums) throws IOException {
    OutputStream file = out();
    long t0 = System.nanoTime();
    ByteBuffer index = ByteBuffer.allocate(8 * (lengths.length + 1));
    long off = 0;
    for (long len : lengths) {
      index.putLong(off);
      off += len;
    }
    index.putLong(off);
    file.write(index.array());
    // close publishes the File and gives up its write lease: from here readers see all of it.
    file.close();
    metrics.incWriteTime(System.nanoTime() - t0);
    return MapOutputCommitMessage.of(lengths.clone());
  }

  @Override
  public void abort(Throwable error) {
    if (writer != null) {
      writer.abort();
    }
  }

  /** Partition p's bytes: appended to the File; {@code close} ends the partition, not the File. */
  private final class PartitionWriter extends OutputStream implements ShufflePartitionWriter {
    private final int partition;
    private final OutputStream file;
    private final long start = position;

    PartitionWriter(int partition, OutputStream file) {
      this.partition = partition;
      this.file = file;
    }

    @Override
    public OutputStream openStream() {
      return this;
    }

    @Override
    public long getNumBytesWritten() {
      return position - start;
    }

    @Override
    public void write(int b) throws IOException {
      file.write(b);
      position++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      // Not timed here: Spark's writers time their own copies into this stream (the bypass
      // writer does); this class adds only what it does apart, the create and the commit.
      file.write(b, off, len);
      position += len;
    }

    @Override
    public void close() {
      lengths[partition] = position - start;
    }
  }
}
