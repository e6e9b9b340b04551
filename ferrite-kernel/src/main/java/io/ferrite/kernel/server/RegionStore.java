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
 * <p>Not thread-safe except {@link #createServiceRegion}, {@link #freeServiceRegion}, {@link
 * #infos} and {@link #serviceRegions}, which synchronize.
 */
final class RegionStore implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RegionStore.class.getName());

  private final Path metaFile;
  private final Map<String, Path> classDirs;
  private final RegionTable table;
  private final SecureRandom random = new SecureRandom();
  private final TreeMap<Integer, Entry> entries = new TreeMap<>();

  /** The id the next region gets: above every id this process has used. */
  private int nextId = 1;

  record Entry(MappedRegion region, String storageClass, String service) {}

  RegionStore(Path serverDir, Map<String, Path> classDirs, RegionTable table) {
    this.metaFile = serverDir.resolve("regions");
    this.classDirs = Map.copyOf(classDirs);
    this.table = table;
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
          if (Files.exists(p) && Files.size(p) == length) {
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
    int id = nextId++;
    long rkey;
    do {
      rkey = random.nextLong();
    } while (rkey == 0);
    MappedRegion r = MappedRegion.create(file(dir(cls), id), id, length, rkey);
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

  synchronized MappedRegion createServiceRegion(String cls, long length, String service) {
    return create(cls, length, service).region();
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
