package io.ferrite.kernel.master;

import io.ferrite.kernel.master.MasterEvent.BlockKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * The master's metadata exactly as the journal rebuilds it: servers with their regions and block
 * ownership, sessions, and persistent owners. {@link #apply} is the only way it changes; {@link
 * MasterState} validates commands and turns them into events. Guarded by the {@link MasterState}
 * lock.
 */
final class Metadata {
  private static final System.Logger LOG = System.getLogger(Metadata.class.getName());

  final TreeMap<Integer, ServerEntry> servers = new TreeMap<>();
  final Map<Long, SessionEntry> sessions = new HashMap<>();
  final Map<String, Set<BlockKey>> owners = new TreeMap<>();

  /** The answers of recent calls that changed this metadata, for their retries. */
  final RememberedAnswers answers = new RememberedAnswers();

  /** Installed extensions by service id; registered before recovery. */
  final Map<Integer, MasterExtension> extensions = new TreeMap<>();

  /** Records of extensions that are not installed, kept verbatim for the next snapshot. */
  final Map<Integer, List<byte[]>> orphanRecords = new TreeMap<>();

  final BlockAllocator allocator;

  /**
   * Blocks freed since the last {@link #drainRevokes}, with their new generation: their servers
   * must install the new keys (REVOKE). Transient. Added under the metadata lock, drained without
   * it ({@link Revoker#revokeNow}), so that an allocation waiting under the lock for revokes to
   * finish ({@link MasterState}) never waits for a drain that needs the lock.
   */
  private final java.util.concurrent.ConcurrentLinkedQueue<Revoke> pendingRevokes =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /**
   * Whether {@link #pendingRevokes} may be non-empty: set after an add, cleared before a drain, so
   * that the usual RPC (which freed nothing) skips the drain; read without the lock by {@link
   * Revoker#revokeNow}.
   */
  volatile boolean revokesPending;

  /**
   * Whether freed blocks are quarantined until revoked: only when blocks carry their own keys
   * ({@link MasterState#blockKeys}); with region keys a revoke would change nothing.
   */
  boolean revoking;

  /** A freed block and the generation its server must install. */
  record Revoke(BlockKey block, int generation) {}

  int nextServerId = 1;
  private final long blockSize;
  private final LongSupplier clock;

  Metadata(long blockSize, LongSupplier clock) {
    this.blockSize = blockSize;
    this.clock = clock;
    this.allocator = new BlockAllocator(servers, blockSize);
  }

  /**
   * Applies one event. Used for mutations (after the sink accepted them) and for replay; an event
   * that does not fit the state (possible only after a lost record) is skipped with a warning.
   */
  void apply(MasterEvent e) {
    if (e instanceof MasterEvent.ServerRegistered r) {
      ServerEntry s = servers.computeIfAbsent(r.serverId(), ServerEntry::new);
      s.name = r.name();
      s.hostId = r.hostId();
      s.addresses = r.addresses();
      nextServerId = Math.max(nextServerId, r.serverId() + 1);
    } else if (e instanceof MasterEvent.RegionAdded a) {
      ServerEntry s = servers.get(a.region().ref().serverId());
      if (s == null) {
        skip(e, "unknown server");
        return;
      }
      s.regions.put(a.region().ref().regionId(), new RegionEntry(a.region(), blockSize));
      allocator.knowClass(a.region().storageClass());
    } else if (e instanceof MasterEvent.RegionRemoved r) {
      ServerEntry s = servers.get(r.serverId());
      RegionEntry reg = s == null ? null : s.regions.get(r.regionId());
      if (reg == null) {
        skip(e, "unknown region");
        return;
      }
      for (int i = reg.used.nextSetBit(0); i >= 0; i = reg.used.nextSetBit(i + 1)) {
        release(new BlockKey(r.serverId(), r.regionId(), i), reg);
      }
      s.regions.remove(r.regionId());
    } else if (e instanceof MasterEvent.SessionOpened o) {
      sessions.put(
          o.sessionId(),
          new SessionEntry(o.sessionId(), o.client(), o.leaseMillis(), clock.getAsLong()));
    } else if (e instanceof MasterEvent.SessionClosed c) {
      SessionEntry s = sessions.get(c.sessionId());
      if (s == null) {
        skip(e, "unknown session");
        return;
      }
      for (BlockKey k : new ArrayList<>(s.blocks)) {
        RegionEntry r = region(k);
        if (r != null) {
          release(k, r);
        }
      }
      sessions.remove(c.sessionId());
      answers.sessionClosed(c.sessionId());
    } else if (e instanceof MasterEvent.RequestApplied a) {
      // A call of a session that is gone (closed in the same group, expired) needs no answer.
      if (sessions.containsKey(a.sessionId())) {
        answers.applied(a.sessionId(), a.seq(), a.ackedBelow());
      }
    } else if (e instanceof MasterEvent.RequestAnswered a) {
      answers.answered(a.sessionId(), a.seq(), a.status(), a.body());
    } else if (e instanceof MasterEvent.BlocksAllocated a) {
      SessionEntry s = a.owner().isEmpty() ? sessions.get(a.sessionId()) : null;
      if (a.owner().isEmpty() && s == null) {
        skip(e, "unknown session");
        return;
      }
      for (BlockKey k : a.blocks()) {
        RegionEntry r = region(k);
        if (r == null || k.index() < 0 || k.index() >= r.blocks || r.used.get(k.index())) {
          skip(e, "block " + k + " is not free");
          continue;
        }
        r.used.set(k.index());
        r.usedCount++;
        // Replay keeps every freed block quarantined (recovered() recomputes it); a block the
        // live master allocated was not, so its allocation ends any quarantine here.
        r.unquarantine(k.index());
        r.session[k.index()] = a.owner().isEmpty() ? a.sessionId() : 0;
        r.owner[k.index()] = a.owner().isEmpty() ? null : a.owner();
        if (s != null) {
          s.blocks.add(k);
        } else {
          owners.computeIfAbsent(a.owner(), o -> new LinkedHashSet<>()).add(k);
        }
      }
    } else if (e instanceof MasterEvent.ExtensionRecord x) {
      MasterExtension ext = extensions.get(x.serviceId());
      if (ext == null) {
        orphanRecords.computeIfAbsent(x.serviceId(), k -> new ArrayList<>()).add(x.record());
      } else {
        ext.apply(
            java.nio.ByteBuffer.wrap(x.record())
                .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .asReadOnlyBuffer()
                .order(java.nio.ByteOrder.LITTLE_ENDIAN));
      }
    } else if (e instanceof MasterEvent.BlockGenerations g) {
      ServerEntry s = servers.get(g.serverId());
      RegionEntry reg = s == null ? null : s.regions.get(g.regionId());
      int[] gens = g.generations();
      if (reg == null || gens.length != reg.blocks) {
        skip(e, "unknown region or block count");
        return;
      }
      System.arraycopy(gens, 0, reg.generation, 0, gens.length);
    } else if (e instanceof MasterEvent.BlocksFreed f) {
      for (BlockKey k : f.blocks()) {
        RegionEntry r = region(k);
        if (r == null || k.index() < 0 || k.index() >= r.blocks || !r.used.get(k.index())) {
          skip(e, "block " + k + " is not allocated");
          continue;
        }
        release(k, r);
      }
    }
  }

  RegionEntry region(BlockKey k) {
    ServerEntry s = servers.get(k.serverId());
    return s == null ? null : s.regions.get(k.regionId());
  }

  private void release(BlockKey k, RegionEntry r) {
    int i = k.index();
    if (r.owner[i] != null) {
      Set<BlockKey> set = owners.get(r.owner[i]);
      if (set != null) {
        set.remove(k);
        if (set.isEmpty()) {
          owners.remove(r.owner[i]);
        }
      }
    } else {
      SessionEntry s = sessions.get(r.session[i]);
      if (s != null) {
        s.blocks.remove(k);
      }
    }
    r.used.clear(i);
    r.usedCount--;
    r.owner[i] = null;
    r.session[i] = 0;
    // A new generation, a new key: the old one must stop on the server before anyone else gets
    // the block.
    r.generation[i]++;
    if (revoking) {
      r.quarantine(i);
      pendingRevokes.add(new Revoke(k, r.generation[i]));
      revokesPending = true;
    }
  }

  /** The revokes owed since the last call (and forgets them). Any thread, no lock needed. */
  List<Revoke> drainRevokes() {
    revokesPending = false; // before the polls: an add after them sets it again
    List<Revoke> out = new ArrayList<>();
    Revoke r;
    while ((r = pendingRevokes.poll()) != null) {
      out.add(r);
    }
    return out;
  }

  /**
   * After replay: nothing was sent for the replayed frees, and a server may still honour any
   * earlier generation: every free block past generation 0 is quarantined until its server
   * registers again (or a revoke succeeds).
   */
  void recovered() {
    pendingRevokes.clear();
    revokesPending = false;
    for (ServerEntry s : servers.values()) {
      for (RegionEntry r : s.regions.values()) {
        for (int i = 0; i < r.blocks; i++) {
          if (revoking && !r.used.get(i) && r.generation[i] > 0) {
            r.quarantine(i);
          } else {
            r.unquarantine(i);
          }
        }
      }
    }
  }

  private static void skip(MasterEvent e, String why) {
    LOG.log(System.Logger.Level.WARNING, "journal event skipped ({0}): {1}", why, e);
  }

  /** Events that, replayed into an empty state, recreate this one: the content of a snapshot. */
  List<MasterEvent> snapshotEvents() {
    List<MasterEvent> out = new ArrayList<>();
    for (ServerEntry s : servers.values()) {
      out.add(new MasterEvent.ServerRegistered(s.id, s.name, s.hostId, s.addresses));
      for (RegionEntry r : s.regions.values()) {
        out.add(new MasterEvent.RegionAdded(r.info));
        if (java.util.Arrays.stream(r.generation).anyMatch(g -> g != 0)) {
          out.add(new MasterEvent.BlockGenerations(s.id, r.info.ref().regionId(), r.generation));
        }
      }
    }
    for (SessionEntry s : sessions.values()) {
      out.add(new MasterEvent.SessionOpened(s.id, s.client, s.leaseMillis));
      if (!s.blocks.isEmpty()) {
        out.add(new MasterEvent.BlocksAllocated(s.id, "", new ArrayList<>(s.blocks)));
      }
    }
    answers.snapshotInto(out);
    owners.forEach(
        (o, keys) -> out.add(new MasterEvent.BlocksAllocated(0, o, new ArrayList<>(keys))));
    // Extensions after the blocks, so that their records may refer to owned blocks.
    extensions.forEach(
        (id, ext) -> {
          for (byte[] rec : ext.snapshot()) {
            out.add(new MasterEvent.ExtensionRecord(id, rec));
          }
        });
    orphanRecords.forEach(
        (id, recs) -> {
          for (byte[] rec : recs) {
            out.add(new MasterEvent.ExtensionRecord(id, rec));
          }
        });
    return out;
  }
}
