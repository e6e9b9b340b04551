package io.ferrite.nodes.master;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.master.MasterContext;

/**
 * The version words that let a client reuse a lookup without asking the master: one 64-bit word per
 * node (its <b>slot</b>) in a region the master serves itself, which clients read one-sided (over
 * shm, a load from their own mapping of the file).
 *
 * <pre>
 *  region (8 B per slot, little-endian)       slot s: version, even = stable
 *  +---------+---------+---------+---- .. ---+
 *  | slot 0  | slot 1  | slot 2  |           |  odd while a change to the slot's node commits
 *  +---------+---------+---------+---- .. ---+
 * </pre>
 *
 * <h2>Protocol (docs/NODES.md, "Cached gets")</h2>
 *
 * <ul>
 *   <li>Every change that alters what a lookup of an existing node returns — its removal, its move,
 *       its replacement by another KeyValue, its publication — is made inside {@link #begin} /
 *       {@link #end}: the node's word is made odd (an atomic add, sequentially consistent) before
 *       the change's journal record is written and applied, and even again after.
 *   <li>A versioned lookup reads, under the namespace's read lock, the words of every node on the
 *       path (root excluded: it never moves); if one is odd the answer is not cacheable.
 *   <li>A client that kept (answer, words) reads the same words again before using the answer: all
 *       unchanged means no change to any node of the path began since the lookup, so the answer is
 *       still the state of the namespace at the moment of that read, which is where the get is
 *       linearized.
 * </ul>
 *
 * Slots are assigned when a node is created (in {@code apply}, so under the namespace's write lock)
 * and returned when it is removed; a reused slot keeps counting up from where its previous node
 * left it, so a word never returns to a value a client kept. Slots are transient: a restarted
 * master has a new region (new rkey), and what clients kept of the old one fails to read.
 */
final class LookupVersions {
  /** Slots of the region: 8 MiB. Nodes beyond this many at once are not cacheable. */
  static final int SLOTS = 1 << 20;

  private int next;
  private int[] free = new int[64];
  private int freeCount;

  private volatile MappedRegion words;
  private volatile RegionRef ref;

  /** A slot for a new node, or -1 when none is left. Under the namespace's write lock. */
  int assign() {
    if (freeCount > 0) {
      return free[--freeCount];
    }
    return next < SLOTS ? next++ : -1;
  }

  /** Gives back a removed node's slot. Under the namespace's write lock. */
  void release(int slot) {
    if (slot < 0) {
      return;
    }
    if (freeCount == free.length) {
      free = java.util.Arrays.copyOf(free, free.length * 2);
    }
    free[freeCount++] = slot;
  }

  /** Serves the words from {@code r} (created at start); without one nothing is cacheable. */
  void attach(MasterContext.MasterRegion r) {
    ref = r.ref();
    words = r.memory();
  }

  /** The region clients read, or null if cached lookups are off. */
  RegionRef ref() {
    return words == null ? null : ref;
  }

  /** The word of {@code slot} (acquire), or -1 (odd: not cacheable) without a region. */
  long read(int slot) {
    MappedRegion w = words;
    return w == null || slot < 0 ? -1 : w.getLongAcquire(8L * slot);
  }

  /**
   * Marks the slots of {@code nodes} (nulls ignored) changing: odd. Returns them, for {@link #end}.
   * Under the metadata lock, before the change's records are committed.
   */
  int[] begin(Node... nodes) {
    MappedRegion w = words;
    int[] slots = new int[nodes.length];
    for (int i = 0; i < nodes.length; i++) {
      int s = nodes[i] == null ? -1 : nodes[i].slot;
      for (int k = 0; k < i; k++) {
        if (slots[k] == s) {
          s = -1; // once per slot: a second add would make the word even in mid-change
        }
      }
      slots[i] = s;
      if (w != null && s >= 0) {
        w.fetchAndAdd(8L * s, 1);
      }
    }
    return slots;
  }

  /** The change committed (or failed): the slots are stable again, at a value never seen before. */
  void end(int[] slots) {
    MappedRegion w = words;
    if (w == null) {
      return;
    }
    for (int s : slots) {
      if (s >= 0) {
        w.fetchAndAdd(8L * s, 1);
      }
    }
  }
}
