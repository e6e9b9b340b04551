package io.ferrite.hadoop;

import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException.Reason;
import io.ferrite.nodes.NodesProtocol;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.CommonPathCapabilities;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.impl.PathCapabilitiesSupport;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.Progressable;

/**
 * Hadoop's {@link FileSystem} over the nodes face, for {@code ferrite://host:port/path} (the
 * master's tcp endpoint; {@link FerriteFsConfig} has the keys and defaults). Registered through
 * {@code META-INF/services}, so {@code FileSystem.get} finds it with no {@code fs.ferrite.impl}.
 *
 * <p>Hadoop paths are nodes: a Directory is a directory and a File a file. The other node types
 * show up as what they behave like: a Table or a Bag is a directory (its KeyValues or Files are
 * listed as its files; a non-enumerable Table lists nothing), a KeyValue is a read-only file. A
 * File can be created only in a Directory or a Bag; a directory only in a Directory.
 *
 * <p>Semantics, against the Hadoop FileSystem specification:
 *
 * <ul>
 *   <li>{@code create} makes missing parents and publishes the empty file at once, so it is visible
 *       as soon as {@code create} returns (the writer holds its lease until close). With {@code
 *       overwrite} an existing file is removed, then created anew: not atomic, a reader may find no
 *       file in between (readers that opened the old file keep reading it for the master's reclaim
 *       grace period). A directory is never overwritten.
 *   <li>{@code rename} is one journaled move: atomic for files and whole directories. Into an
 *       existing directory it moves under it; onto an existing file, with the source missing, or
 *       with the destination's parent missing or a file, it returns false and changes nothing; a
 *       directory into its own subtree is an IOException (as in HDFS).
 *   <li>{@code delete} of a directory is one journaled removal: atomic. {@code delete("/")} never
 *       removes the root: true if it is empty, false when recursive (as in HDFS), {@link
 *       PathIsNotEmptyDirectoryException} otherwise.
 *   <li>{@code append} takes the file's write lease; another writer gets an IOException. {@code
 *       concat}, {@code truncate}, permissions, owners, times, symlinks, ACLs and xattrs are not
 *       supported (the defaults of {@link FileSystem}: ignored or UnsupportedOperationException).
 *   <li>{@code getFileBlockLocations} names the memory servers that hold each block (every copy of
 *       a replicated File's block); {@code getReplication} is the File's copies.
 *   <li>{@code create}'s {@code replication} is the File's copies ({@link CreateOptions#replicas}),
 *       clamped to 1..3 and to the ALIVE memory servers (each copy needs its own server), with a
 *       log line the first time a request is clamped: Hadoop jobs ask for more than a small cluster
 *       has (HDFS's default 3, MapReduce's 10 for job files) and HDFS too accepts those and keeps
 *       fewer. The default is {@link FerriteFsConfig#REPLICATION}, else {@code dfs.replication},
 *       else 1. {@code setReplication} cannot change an existing File's copies (the nodes face
 *       fixes them at create): it is true when the File has them already, and false (logged)
 *       otherwise, as for a directory.
 * </ul>
 */
public final class FerriteFileSystem extends FileSystem {
  private static final System.Logger LOG = System.getLogger(FerriteFileSystem.class.getName());

  public static final String SCHEME = "ferrite";

  private URI uri;
  private Path workingDir;
  private FerriteClient client;
  private Nodes nodes;
  private NamespaceOps ops;
  private BlockLocator locator;
  private String user;
  private long blockSize;
  private short defaultReplication;

  /** "requested->granted" pairs already logged: one line per kind of clamp, not per create. */
  private final java.util.Set<String> clampsLogged = ConcurrentHashMap.newKeySet();

  /** For {@link java.util.ServiceLoader}: cheap; {@link #initialize} connects. */
  public FerriteFileSystem() {}

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  protected int getDefaultPort() {
    return FerriteFsConfig.DEFAULT_PORT;
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    FerriteFsConfig.Target target = FerriteFsConfig.resolve(name, conf, System.getenv());
    user = UserGroupInformation.getCurrentUser().getShortUserName();
    try {
      this.uri = new URI(SCHEME, name.getAuthority(), "/", null, null);
    } catch (URISyntaxException e) {
      throw new IOException("bad URI " + name, e);
    }
    try {
      client = Ferrite.connect(target.master(), target.options());
      nodes = new Nodes(client);
    } catch (RuntimeException e) {
      if (client != null) {
        client.close();
      }
      throw IOErrors.translate(e, "connect to", target.master());
    }
    blockSize = nodes.blockSize();
    defaultReplication = FerriteFsConfig.replication(conf);
    ops = new NamespaceOps(nodes);
    locator = new BlockLocator(nodes, target.master());
    workingDir = makeQualified(new Path("/"));
  }

  @Override
  public URI getUri() {
    return uri;
  }

  /** The nodes client this file system uses (for callers that want the other node types). */
  public Nodes nodes() {
    return nodes;
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDir;
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    workingDir = makeQualified(dir);
  }

  @Override
  public long getDefaultBlockSize(Path f) {
    return blockSize;
  }

  @Override
  public short getDefaultReplication(Path path) {
    return defaultReplication;
  }

  /**
   * The copies a File asked to have {@code requested} gets: at least 1, at most {@link
   * NodesProtocol#MAX_REPLICAS} and the ALIVE memory servers (the master refuses more: each copy
   * goes to another server). A clamp is logged once per requested/granted pair. Costs one MEMBERS
   * call per create that asks for more than one copy.
   */
  int replicasFor(short requested, String path) throws IOException {
    int want = Math.max(1, Math.min(requested, NodesProtocol.MAX_REPLICAS));
    String why = requested < 1 ? "at least 1" : "at most " + NodesProtocol.MAX_REPLICAS;
    if (want > 1) {
      long alive;
      try {
        alive = client.members().stream().filter(m -> m.state() == ServerState.ALIVE).count();
      } catch (RuntimeException e) {
        throw IOErrors.translate(e, "create", path);
      }
      if (alive < want) {
        want = (int) Math.max(1, alive);
        why = alive + " memory server(s) ALIVE, each copy on another";
      }
    }
    if (want != requested && clampsLogged.add(requested + "->" + want)) {
      LOG.log(
          System.Logger.Level.WARNING,
          "replication {0} asked for {1} made {2} copy(ies): {3} (logged once per such request)",
          requested,
          path,
          want,
          why);
    }
    return want;
  }

  /**
   * An existing File's copies cannot change (the nodes face fixes them at create): true if {@code
   * src} has {@code replication} copies already (after {@link #replicasFor}'s clamp), false for a
   * directory or another count, logged. HDFS's FsShell {@code -setrep} reports the false.
   */
  @Override
  public boolean setReplication(Path src, short replication) throws IOException {
    String p = pathOf(src);
    statistics.incrementWriteOps(1);
    NodeInfo n = ops.lookup(p, "setReplication");
    if (n.type().isContainer()) {
      return false;
    }
    int want = replicasFor(replication, p);
    if (n.replicas() == want) {
      return true;
    }
    LOG.log(
        System.Logger.Level.WARNING,
        "setReplication {0} on {1}: it keeps its {2} copy(ies): a File''s copies are fixed when it"
            + " is created (copy it with the replication wanted)",
        replication,
        p,
        n.replicas());
    return false;
  }

  /** No delegation tokens: access is by cluster secret. */
  @Override
  public String getCanonicalServiceName() {
    return null;
  }

  @Override
  public boolean hasPathCapability(Path path, String capability) throws IOException {
    switch (PathCapabilitiesSupport.validatePathCapabilityArgs(makeQualified(path), capability)) {
      case CommonPathCapabilities.FS_APPEND:
        return true;
      case CommonPathCapabilities.FS_CONCAT:
      case CommonPathCapabilities.FS_PERMISSIONS:
      case CommonPathCapabilities.FS_TRUNCATE:
        return false;
      default:
        return super.hasPathCapability(path, capability);
    }
  }

  /** The nodes path of {@code p}: absolute (against the working directory), normalised. */
  String pathOf(Path p) {
    checkPath(p);
    Path abs = p.isAbsolute() ? p : new Path(workingDir, p);
    String s = abs.toUri().getPath();
    if (s == null || s.isEmpty()) {
      return "/";
    }
    while (s.length() > 1 && s.endsWith("/")) {
      s = s.substring(0, s.length() - 1);
    }
    return s;
  }

  /** The qualified Hadoop path of nodes path {@code p}. */
  Path qualified(String p) {
    try {
      return new Path(new URI(SCHEME, uri.getAuthority(), p, null, null));
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("path " + p, e);
    }
  }

  FileStatus status(NodeInfo n, String path) {
    boolean dir = n.type().isContainer();
    return new FileStatus(
        dir ? 0 : n.size(),
        dir,
        dir ? 1 : n.replicas(),
        dir ? 0 : blockSize,
        n.mtime(),
        0,
        null,
        user,
        user,
        qualified(path));
  }

  // ---------------------------------------------------------------- files

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    String p = pathOf(f);
    NodeInfo n = ops.lookup(p, "open");
    if (n.type().isContainer()) {
      throw new FileNotFoundException(p + " is a " + n.type().label() + ", not a file");
    }
    statistics.incrementReadOps(1);
    try {
      return new FSDataInputStream(new FerriteInputStream(nodes.open(n), statistics, p));
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, "open", p);
    }
  }

  @Override
  public FSDataOutputStream create(
      Path f,
      FsPermission permission,
      boolean overwrite,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    String p = pathOf(f);
    return create(p, overwrite, true, replicasFor(replication, p));
  }

  @Override
  public FSDataOutputStream createNonRecursive(
      Path f,
      FsPermission permission,
      EnumSet<CreateFlag> flags,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    String p = pathOf(f);
    return create(p, flags.contains(CreateFlag.OVERWRITE), false, replicasFor(replication, p));
  }

  private FSDataOutputStream create(String p, boolean overwrite, boolean parents, int replicas)
      throws IOException {
    statistics.incrementWriteOps(1);
    NodeWriter w =
        ops.createWriter(p, overwrite, parents, CreateOptions.DEFAULT.withReplicas(replicas));
    return new FSDataOutputStream(new FerriteOutputStream(w, p), statistics);
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress)
      throws IOException {
    String p = pathOf(f);
    statistics.incrementWriteOps(1);
    NodeWriter w;
    try {
      w = nodes.append(p);
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, "append", p);
    }
    return new FSDataOutputStream(new FerriteOutputStream(w, p), statistics, w.position());
  }

  // ---------------------------------------------------------------- namespace

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    String s = pathOf(src);
    String d = pathOf(dst);
    statistics.incrementWriteOps(1);
    return ops.rename(s, d);
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    String p = pathOf(f);
    statistics.incrementWriteOps(1);
    return ops.delete(p, recursive);
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    statistics.incrementWriteOps(1);
    ops.mkdirs(pathOf(f), "mkdirs");
    return true;
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    String p = pathOf(f);
    statistics.incrementReadOps(1);
    return status(ops.lookup(p, "getFileStatus"), p);
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    List<FileStatus> out = new ArrayList<>();
    RemoteIterator<FileStatus> it = listStatusIterator(f);
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out.toArray(new FileStatus[0]);
  }

  /**
   * The children of a directory, a page of up to 4096 at a time (one RPC each, with type and size:
   * no lookup per entry); for a file, the file itself.
   */
  @Override
  public RemoteIterator<FileStatus> listStatusIterator(Path f) throws IOException {
    String p = pathOf(f);
    statistics.incrementReadOps(1);
    Iterator<NodeInfo> children;
    try {
      children = nodes.list(p).iterator();
    } catch (RuntimeException e) {
      if (IOErrors.reason(e) != Reason.WRONG_TYPE) {
        throw IOErrors.translate(e, "listStatus", p);
      }
      FileStatus self = getFileStatus(f);
      return new Listing(p, List.<NodeInfo>of().iterator(), self);
    }
    return new Listing(p, children, null);
  }

  /** A listing that turns the nodes' runtime failures into IOExceptions. */
  private final class Listing implements RemoteIterator<FileStatus> {
    private final String dir;
    private final Iterator<NodeInfo> children;
    private FileStatus single;

    Listing(String dir, Iterator<NodeInfo> children, FileStatus single) {
      this.dir = dir;
      this.children = children;
      this.single = single;
    }

    @Override
    public boolean hasNext() throws IOException {
      if (single != null) {
        return true;
      }
      try {
        return children.hasNext();
      } catch (RuntimeException e) {
        throw IOErrors.translate(e, "listStatus", dir);
      }
    }

    @Override
    public FileStatus next() throws IOException {
      if (single != null) {
        FileStatus s = single;
        single = null;
        return s;
      }
      if (!hasNext()) {
        throw new NoSuchElementException("no more entries in " + dir);
      }
      NodeInfo c = children.next();
      return status(c, NodePath.join(dir, c.path()));
    }
  }

  // ---------------------------------------------------------------- locality

  /**
   * Where the bytes {@code [start, start + len)} of a file live: one location per block, naming the
   * memory server that holds it ({@code host} and {@code host:port} of its tcp endpoint). A
   * KeyValue of up to 1 KiB lives in the master's metadata: its one location is the master. An
   * empty range past the end, or a directory, has none.
   */
  @Override
  public BlockLocation[] getFileBlockLocations(FileStatus file, long start, long len)
      throws IOException {
    if (file == null) {
      return null;
    }
    if (start < 0 || len < 0) {
      throw new IllegalArgumentException("start: " + start + ", len: " + len + " (expected: >= 0)");
    }
    if (file.isDirectory() || file.getLen() <= start) {
      return new BlockLocation[0];
    }
    String p = pathOf(file.getPath());
    NodeInfo n = ops.lookup(p, "getFileBlockLocations");
    if (!n.type().hasData() || n.size() <= start) {
      return new BlockLocation[0];
    }
    try {
      return locator.locate(n, start, len);
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, "getFileBlockLocations", p);
    }
  }

  /**
   * Capacity and use summed over the live memory servers and every storage class ({@code hadoop fs
   * -df}); {@code ferrite fs df} shows them per class.
   */
  @Override
  public FsStatus getStatus(Path p) throws IOException {
    statistics.incrementReadOps(1);
    long capacity = 0;
    long used = 0;
    try {
      for (long[] t : client.status().totals(ServerState.ALIVE).values()) {
        capacity += t[0];
        used += t[1];
      }
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, "getStatus", "/");
    }
    return new FsStatus(capacity, used, capacity - used);
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      if (client != null) {
        client.close();
      }
    }
  }

  @Override
  public String toString() {
    return "FerriteFileSystem[" + uri + ", user=" + user + "]";
  }
}
