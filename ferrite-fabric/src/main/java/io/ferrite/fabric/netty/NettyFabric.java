package io.ferrite.fabric.netty;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FerriteException;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * What the byte-stream fabrics share: the event loop groups they own (created on first use, so a
 * client-only fabric starts no server threads), and the servers and connections they made, which
 * {@link #close()} closes before stopping the loops.
 */
public abstract class NettyFabric implements Fabric {
  private static final System.Logger LOG = System.getLogger(NettyFabric.class.getName());

  private final String name;
  private final int ioThreads;
  private final FabricTuning tuning;
  private final Set<AutoCloseable> open = ConcurrentHashMap.newKeySet();
  private EventLoopGroup serverGroup;
  private EventLoopGroup clientGroup;
  private boolean closed;

  protected NettyFabric(String name, int ioThreads, FabricTuning tuning) {
    if (ioThreads < 1) {
      throw new IllegalArgumentException("ioThreads: " + ioThreads + " (expected: >= 1)");
    }
    this.name = name;
    this.ioThreads = ioThreads;
    this.tuning = java.util.Objects.requireNonNull(tuning, "tuning");
  }

  /** The switches this fabric's servers and connections were made with. */
  public final FabricTuning tuning() {
    return tuning;
  }

  /** One I/O thread per core: the soft NIC's work is short, and more threads only contend. */
  protected static int defaultIoThreads() {
    return Math.max(1, Runtime.getRuntime().availableProcessors());
  }

  /**
   * How long this fabric's server event loops poll without blocking after they last had work
   * ({@link NettyTransport#newGroup(String, int, long)}); 0 (the default) blocks at once.
   */
  protected long serverLoopSpinNanos() {
    return 0;
  }

  @Override
  public final String name() {
    return name;
  }

  protected final synchronized EventLoopGroup serverGroup() {
    checkOpen();
    if (serverGroup == null) {
      serverGroup =
          NettyTransport.newGroup("ferrite-" + name + "-server", ioThreads, serverLoopSpinNanos());
    }
    return serverGroup;
  }

  protected final synchronized EventLoopGroup clientGroup() {
    checkOpen();
    if (clientGroup == null) {
      clientGroup = NettyTransport.newGroup("ferrite-" + name + "-client", ioThreads);
    }
    return clientGroup;
  }

  private void checkOpen() {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, name + " fabric is closed");
    }
  }

  /** Registers something {@link #close()} must close; returns it. */
  protected final <T extends AutoCloseable> T track(T resource) {
    open.add(resource);
    synchronized (this) {
      if (closed) {
        open.remove(resource);
        closeQuietly(resource);
        checkOpen();
      }
    }
    return resource;
  }

  protected final void untrack(AutoCloseable resource) {
    open.remove(resource);
  }

  @Override
  public void close() {
    EventLoopGroup s;
    EventLoopGroup c;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      s = serverGroup;
      c = clientGroup;
    }
    // Connections first (their servers then see clean closes), then servers.
    List<AutoCloseable> all = new ArrayList<>(open);
    all.sort((a, b) -> Boolean.compare(a instanceof NettyServer, b instanceof NettyServer));
    for (AutoCloseable r : all) {
      closeQuietly(r);
    }
    open.clear();
    List<Future<?>> stopping = new ArrayList<>();
    for (EventLoopGroup g : new EventLoopGroup[] {c, s}) {
      if (g != null) {
        stopping.add(g.shutdownGracefully(0, 1, TimeUnit.SECONDS));
      }
    }
    for (Future<?> f : stopping) {
      f.awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }

  private static void closeQuietly(AutoCloseable r) {
    try {
      r.close();
    } catch (Exception e) {
      LOG.log(Level.WARNING, "failed to close " + r, e);
    }
  }
}
