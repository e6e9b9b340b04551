package io.ferrite.kernel.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.proto.RegionInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A memory server's region files, one directory per storage class, and the list of them that
 * survives a crash.
 *
 * <p>Block-pool regions are listed in {@code <serverDir>/regions} (mode 0600) with their rkeys, one
 * per line: {@code id class rkeyHex length}. A server restarted after a crash re-opens the files
 * still there with the same rkeys, so the master keeps the blocks allocated in them; a file that is
 * gone (dram after a reboot or a clean stop) is replaced by a new region with a new rkey. Service
 * regions are not listed: they live until their service frees them ({@link #freeServiceRegion}) or
 * the process stops. Files in the class directories that are not listed are leftovers and are
 * deleted.
 *
 * <p>Region ids are never reused within a process: a freed region's id stays unused, so nothing
 * cached under an id (a shm client's mapping, a layout) can ever name a newer region. (Every fabric
 * also checks the rkey, which differs anyway; after a restart, clients' connections, and with them
 * their mappings, are gone.)
 *
 * <p>Capacity: per storage class, block-pool regions and service regions together hold at most
 * {@code capacity.<class>} bytes. The pool takes it all at start; a service region that does not
 * fit retires empty pool regions (the master agreeing) and is refused with NO_SPACE if that is not
 * enough; space services free goes back to the pool ({@link #regrowPool}).
 *
 * <p>Not thread-safe except {@link #createServiceRegion}, {@link #freeServiceRegion}, {@link
 * #regrowPool}, {@link #infos}, {@link #serviceRegions} and {@link #serviceBytes}, which
 * synchronize.
 */
final class RegionStore implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RegionStore.class.getName());

  private final Path metaFile;
  private final Map<String, Path> classDirs;

  /** Bytes per class that pool and service regions may hold together; absent: no limit. */
  private final Map<String, Long> capacities;

  private final RegionTable table;
  private final SecureRandom random = new SecureRandom();
  private final TreeMap<Integer, Entry> entries = new TreeMap<>();

  /** Set by close: the server's reclaimer may still try to regrow the pool; it must not. */
  private boolean closed;

  /** The id the next region gets: above every id this process has used. */
  private int nextId = 1;

  record Entry(MappedRegion region, String storageClass, String service) {}

  RegionStore(Path serverDir, Map<String, Path> classDirs, RegionTable table) {
    this(serverDir, classDirs, Map.of(), table);
  }

  /**
   * A store whose regions of class {@code c} hold at most {@code capacities.get(c)} bytes, pool and
   * service regions together (see {@link #createServiceRegion}).
   */
  RegionStore(
      Path serverDir,
      Map<String, Path> classDirs,
      Map<String, Long> capacities,
      RegionTable table) {
    this.metaFile = serverDir.resolve("regions");
    this.classDirs = Map.copyOf(classDirs);
    this.capacities = Map.copyOf(capacities);
    this.table = table;
  }

  /**
   * Asks the master to forget an empty block-pool region, so that its space can go to a service
   * region: true if the master no longer hands out its blocks (it had none in use), false if it
   * does (blocks in use).
   *
   * @throws FerriteException UNAVAILABLE if the master cannot be asked
   */
  @FunctionalInterface
  interface Retirer {
    boolean retire(RegionInfo poolRegion);
  }

  private Path dir(String cls) {
    Path d = classDirs.get(cls);
    if (d == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "storage class '" + cls + "' (expected: one of " + classDirs.keySet() + ")");
    }
    return d;
  }

  private static Path file(Path dir, int id) {
    return dir.resolve("region-" + id);
  }

  /** Re-opens the listed regions whose files survived; deletes every other file. */
  void recover() throws IOException {
    for (Path d : classDirs.values()) {
      Secrets.createPrivateDirectories(d);
    }
    if (Files.exists(metaFile)) {
      for (String line : Files.readAllLines(metaFile, StandardCharsets.UTF_8)) {
        String[] f = line.trim().split(" ");
        if (f.length != 4) {
          continue;
        }
        try {
          int id = Integer.parseInt(f[0]);
          String cls = f[1];
          long rkey = Long.parseUnsignedLong(f[2], 16);
          long length = Long.parseLong(f[3]);
          Path p = file(dir(cls), id);
          if (Files.isSymbolicLink(p)) {
            // Never followed: a link planted in the class directory would make the server map
            // (and serve, and write into) a file of someone else's choosing. Deleted below.
            LOG.log(System.Logger.Level.WARNING, "ignoring region file {0}: a symbolic link", p);
            continue;
          }
          if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) && Files.size(p) == length) {
            MappedRegion r = MappedRegion.open(p, id, length, rkey);
            entries.put(id, new Entry(r, cls, ""));
            table.register(r);
            nextId = Math.max(nextId, id + 1);
          }
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "ignoring region list line ''{0}'': {1}", line, e);
        }
      }
    }
    for (Path d : classDirs.values()) {
      try (Stream<Path> s = Files.list(d)) {
        for (Path p : (Iterable<Path>) s::iterator) {
          // Only region files: the directory also holds the lock and a shm fabric's socket.
          if (p.getFileName().toString().startsWith("region-") && !isListed(p)) {
            Files.deleteIfExists(p);
          }
        }
      }
    }
    if (!entries.isEmpty()) {
      LOG.log(
          System.Logger.Level.INFO,
          "re-opened {0} region(s) that survived a restart",
          entries.size());
    }
  }

  private boolean isListed(Path p) {
    for (Entry e : entries.values()) {
      if (e.region().file().equals(p)) {
        return true;
      }
    }
    return false;
  }

  /** Creates or drops block-pool regions of {@code cls} to have exactly {@code count}. */
  void fill(String cls, int count, long regionSize) {
    List<Integer> have = new ArrayList<>();
    entries.forEach(
        (id, e) -> {
          if (e.service().isEmpty() && e.storageClass().equals(cls)) {
            have.add(id);
          }
        });
    for (int i = count; i < have.size(); i++) {
      Entry e = entries.remove(have.get(i));
      table.deregister(e.region().id());
      e.region().closeAndDelete();
    }
    for (int i = have.size(); i < count; i++) {
      create(cls, regionSize, "");
    }
    writeMeta();
  }

  private Entry create(String cls, long length, String service) {
    if (nextId == Integer.MAX_VALUE) {
      throw new FerriteException(ErrorCode.NO_SPACE, "region ids exhausted; restart the server");
    }
    Path dir = dir(cls);
    int id = nextId++;
    long rkey;
    do {
      rkey = random.nextLong();
    } while (rkey == 0);
    // Space at creation (FileSpace): NO_SPACE now if the file system is full, the file deleted.
    MappedRegion r = MappedRegion.create(file(dir, id), id, length, rkey);
    Entry e = new Entry(r, cls, service);
    entries.put(id, e);
    table.register(r);
    return e;
  }

  /**
   * Gives every block-pool region that has none a block key table of {@code blockSize} blocks, all
   * keys 0 (no grant) until {@link BlockGrants} installs them. A table left by an earlier process
   * is replaced: its keys may be revoked ones.
   */
  synchronized void attachBlockKeys(long blockSize) {
    for (Entry e : entries.values()) {
      MappedRegion r = e.region();
      if (e.service().isEmpty() && r.blockKeys() == null) {
        r.attachBlockKeys(
            io.ferrite.fabric.BlockKeys.create(
                io.ferrite.fabric.BlockKeys.fileFor(r.file()),
                blockSize,
                (int) (r.length() / blockSize)));
      }
    }
  }

  /**
   * Creates a region of {@code length} bytes for {@code service} if it fits in the capacity of
   * {@code cls}, where block-pool regions and service regions count alike. When it does not fit,
   * empty block-pool regions (highest id first: the allocator fills a server's regions in order, so
   * those are the emptiest) are retired to make room, each only once {@code retirer} (the master)
   * agreed; {@link #regrowPool} gives the space back to the pool when services free it. The check
   * comes before the file is made; the file gets its space at creation ({@link
   * io.ferrite.fabric.FileSpace}), so a full file system is NO_SPACE here too, never a fault later.
   *
   * @throws FerriteException NO_SPACE if the capacity (or the file system) has no room, saying what
   *     holds it
   */
  synchronized MappedRegion createServiceRegion(
      int serverId, String cls, long length, String service, Retirer retirer) {
    return createServiceRegion(serverId, cls, length, service, retirer, id -> {});
  }

  /**
   * As above; {@code created} gets the new region's id under the store's lock, before {@link
   * #infos} can list it (the server records the region's master group there, so a registration
   * racing this one never lists it under another group).
   */
  synchronized MappedRegion createServiceRegion(
      int serverId,
      String cls,
      long length,
      String service,
      Retirer retirer,
      java.util.function.IntConsumer created) {
    dir(cls);
    long cap = capacities.getOrDefault(cls, Long.MAX_VALUE);
    long over = held(cls, "") + held(cls, null) + length - cap;
    // Retiring the whole pool could not make room when the services' regions alone leave none:
    // refuse at once, not after giving away every empty pool region for nothing.
    FerriteException unasked = null;
    if (over > 0 && held(cls, null) + length <= cap) {
      unasked = retire(serverId, cls, over, retirer);
      over = held(cls, "") + held(cls, null) + length - cap;
    }
    if (over > 0) {
      // The cause, when the master could not be asked (unreachable, or no longer the leader): the
      // room may be there once it answers, and a caller that must not give up (a log replay at
      // boot) tells that from a full capacity by the cause's retryable code.
      throw new FerriteException(
          ErrorCode.NO_SPACE,
          String.format(
                  Locale.ROOT,
                  "no room for a %s region of %d B for service '%s': capacity.%s is %d B, of which"
                      + " service regions hold %d B and block-pool regions with blocks in use %d B",
                  cls,
                  length,
                  service,
                  cls,
                  cap,
                  held(cls, null),
                  held(cls, ""))
              + (unasked == null
                  ? ""
                  : " (the master could not be asked to retire an empty one: "
                      + unasked.getMessage()
                      + ")"),
          unasked);
    }
    MappedRegion r = create(cls, length, service).region();
    created.accept(r.id());
    return r;
  }

  /** Bytes of {@code cls} regions of the block pool ({@code ""}) or of all services (null). */
  private long held(String cls, String service) {
    long n = 0;
    for (Entry e : entries.values()) {
      if (e.storageClass().equals(cls)
          && (service == null ? !e.service().isEmpty() : e.service().equals(service))) {
        n += e.region().length();
      }
    }
    return n;
  }

  /**
   * Retires empty block-pool regions of {@code cls}, highest id first, until {@code need} B. Runs
   * under the store's lock across one master RPC per region: rare (a service growing past the
   * capacity the pool leaves), and a re-registration meanwhile waits in {@link #infos}, so it never
   * lists a region the master was just told to forget. Returns why the master could not be asked
   * (it stops the search), or null.
   */
  private FerriteException retire(int serverId, String cls, long need, Retirer retirer) {
    List<Entry> pool = new ArrayList<>();
    for (Entry e : entries.descendingMap().values()) {
      if (e.service().isEmpty() && e.storageClass().equals(cls)) {
        pool.add(e);
      }
    }
    long freed = 0;
    FerriteException unasked = null;
    for (Entry e : pool) {
      if (freed >= need) {
        break;
      }
      MappedRegion r = e.region();
      boolean gone;
      try {
        gone =
            retirer.retire(
                new RegionInfo(new RegionRef(serverId, r.id(), r.rkey(), r.length()), cls, ""));
      } catch (FerriteException ex) {
        LOG.log(
            System.Logger.Level.INFO,
            "cannot retire block-pool region {0} to make room: {1}",
            r.id(),
            ex.getMessage());
        unasked = ex;
        break; // the master is unreachable: no pool region can go
      }
      if (gone) {
        entries.remove(r.id());
        table.deregister(r.id());
        try {
          // No block of it is allocated, but a stale ref may still be reading: the safe path.
          r.releaseAndDelete();
        } catch (UncheckedIOException ex) {
          LOG.log(System.Logger.Level.WARNING, "retiring " + r, ex);
        }
        freed += r.length();
      }
    }
    if (freed > 0) {
      writeMeta();
    }
    return unasked;
  }

  /**
   * Gives space that services freed back to the block pool: creates pool regions of {@code cls}
   * while a whole one fits in the capacity. Returns them, for the master.
   */
  synchronized List<RegionInfo> regrowPool(int serverId, String cls, long regionSize) {
    List<RegionInfo> grown = new ArrayList<>();
    Long cap = capacities.get(cls);
    if (cap == null || closed) {
      return grown;
    }
    while (held(cls, "") + held(cls, null) + regionSize <= cap) {
      MappedRegion r;
      try {
        r = create(cls, regionSize, "").region();
      } catch (FerriteException e) {
        LOG.log(
            System.Logger.Level.WARNING, "cannot grow the block pool back: {0}", e.getMessage());
        break;
      }
      grown.add(new RegionInfo(new RegionRef(serverId, r.id(), r.rkey(), r.length()), cls, ""));
    }
    if (!grown.isEmpty()) {
      writeMeta();
    }
    return grown;
  }

  /**
   * Whether a whole pool region of {@code cls} would fit in its capacity but is not there: {@link
   * #regrowPool} was refused by the file system (space freed but still mapped somewhere).
   */
  synchronized boolean poolShort(String cls, long regionSize) {
    Long cap = capacities.get(cls);
    return cap != null && !closed && held(cls, "") + held(cls, null) + regionSize <= cap;
  }

  /**
   * Frees service region {@code r} of {@code service}: deregistered from every fabric (an op that
   * looks it up from now on fails with {@link ErrorCode#NO_SUCH_REGION}), closed to ops that
   * already found it and unmapped by the JVM once none holds it ({@link MappedRegion#release()}),
   * its file deleted (never truncated: a shm client that maps it keeps reading what it held and
   * never faults; the memory goes back when the last mapping is gone). Returns what the region was,
   * for the master's directory.
   *
   * @throws FerriteException NO_SUCH_REGION if {@code r} is not a live region of this server (freed
   *     already), INVALID_ARGUMENT if it belongs to the block pool or to another service
   */
  synchronized RegionInfo freeServiceRegion(int serverId, MappedRegion r, String service) {
    Entry e = entries.get(r.id());
    if (e == null || e.region() != r) {
      throw new FerriteException(
          ErrorCode.NO_SUCH_REGION,
          "region " + r.id() + " is not a region of this server (freed already?)");
    }
    if (!e.service().equals(service)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "region "
              + r.id()
              + " belongs to "
              + (e.service().isEmpty() ? "the block pool" : "service '" + e.service() + "'")
              + " (expected: a region of service '"
              + service
              + "')");
    }
    RegionInfo info =
        new RegionInfo(
            new RegionRef(serverId, r.id(), r.rkey(), r.length()), e.storageClass(), e.service());
    entries.remove(r.id());
    table.deregister(r.id());
    try {
      r.releaseAndDelete();
    } catch (UncheckedIOException ex) {
      // Out of the table and the list already; the file is a leftover the next start deletes.
      LOG.log(System.Logger.Level.WARNING, "freeing " + r, ex);
    }
    return info;
  }

  /** The number and total length of the live regions of {@code service}. */
  synchronized long[] serviceRegions(String service) {
    long n = 0;
    long bytes = 0;
    for (Entry e : entries.values()) {
      if (e.service().equals(service)) {
        n++;
        bytes += e.region().length();
      }
    }
    return new long[] {n, bytes};
  }

  /**
   * Bytes held by service regions, per storage class and then per service (face): what {@code
   * ferrite status} shows beside the block pool's use, and what the capacity gauge publishes as
   * {@code use=service}. Sorted by name; classes and faces without service regions are absent.
   */
  synchronized Map<String, Map<String, Long>> serviceBytes() {
    return RegionInfo.serviceBytes(infos(0));
  }

  synchronized List<RegionInfo> infos(int serverId) {
    List<RegionInfo> out = new ArrayList<>();
    for (Entry e : entries.values()) {
      MappedRegion r = e.region();
      out.add(
          new RegionInfo(
              new RegionRef(serverId, r.id(), r.rkey(), r.length()),
              e.storageClass(),
              e.service()));
    }
    return out;
  }

  synchronized RegionInfo info(int serverId, MappedRegion r) {
    Entry e = entries.get(r.id());
    if (e == null || e.region() != r) {
      throw new FerriteException(ErrorCode.NO_SUCH_REGION, "not a region of this server: " + r);
    }
    return new RegionInfo(
        new RegionRef(serverId, r.id(), r.rkey(), r.length()), e.storageClass(), e.service());
  }

  private void writeMeta() {
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<Integer, Entry> me : entries.entrySet()) {
      Entry e = me.getValue();
      if (e.service().isEmpty()) {
        sb.append(
            String.format(
                Locale.ROOT,
                "%d %s %016x %d%n",
                me.getKey(),
                e.storageClass(),
                e.region().rkey(),
                e.region().length()));
      }
    }
    try {
      Path tmp = metaFile.resolveSibling("regions.tmp");
      Files.deleteIfExists(tmp);
      Files.createFile(
          tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(tmp, sb.toString(), StandardCharsets.UTF_8);
      Files.move(
          tmp, metaFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write region list " + metaFile, e);
    }
  }

  /**
   * Unmaps every region. Service regions and {@code deleteClasses} regions (dram on a clean stop)
   * are deleted and dropped from the list; the others stay for the next start.
   */
  @Override
  public synchronized void close() {
    close(List.of("dram"));
  }

  synchronized void close(List<String> deleteClasses) {
    closed = true;
    for (Entry e : new ArrayList<>(entries.values())) {
      table.deregister(e.region().id());
      boolean delete = !e.service().isEmpty() || deleteClasses.contains(e.storageClass());
      try {
        if (delete) {
          e.region().closeAndDelete();
          entries.remove(e.region().id());
        } else {
          e.region().close();
        }
      } catch (RuntimeException ex) {
        LOG.log(System.Logger.Level.WARNING, "closing " + e.region(), ex);
      }
    }
    writeMeta();
  }
}
