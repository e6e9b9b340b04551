package io.ferrite.nodes.master;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.nodes.NodeType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One node of the namespace as the master keeps it. Mutated only by {@link Namespace#apply}, under
 * the master's metadata lock.
 */
final class Node {
  final long id;
  final NodeType type;
  Node parent;
  String name;
  final String storageClass;
  final String location;
  final boolean enumerable;

  /** False while a File or KeyValue is being created: invisible to lookup and listing. */
  boolean visible;

  /** A KeyValue being put: not in its parent's children until it is published. */
  boolean detached;

  /** The session holding the write lease, 0 for none. */
  long writer;

  long size;
  long mtime;
  long checksum;
  byte[] inline;

  /**
   * The node's blocks, {@link #replicas} refs per logical block: copy {@code k} of block {@code i}
   * is {@code blocks.get(i * replicas + k)}, each copy on another server (a "slot").
   */
  final List<BlockRef> blocks = new ArrayList<>();

  /** Copies of each block: 1 (the default), 2 or 3. Set at create, never changed. */
  int replicas = 1;

  /**
   * Indices into {@link #blocks} (slots) whose memory is gone (the kernel declared their region
   * lost): the refs stay where they were, so indices keep meaning bytes {@code [i * blockSize, (i +
   * 1) * blockSize)} (logical block {@code slot / replicas}), but they are no longer allocated to
   * this node and are never read, written or freed. A replicated block is lost only when every copy
   * is; a lost copy is replaced by re-replication (a BLOCKS record over the slot clears its bit).
   */
  final java.util.BitSet lost = new java.util.BitSet();

  /** The node's word in {@link LookupVersions} (transient), or -1: not cacheable. */
  int slot = -1;

  /**
   * Children by real name. Enumerable containers keep them sorted (listing pages by name); a
   * non-enumerable Table needs no order, so it uses a hash map (cheaper creates, paper §3.1).
   */
  final Map<String, Node> children;

  Node(
      long id,
      NodeType type,
      String storageClass,
      String location,
      boolean enumerable,
      boolean visible,
      long writer,
      long mtime) {
    this.id = id;
    this.type = type;
    this.storageClass = storageClass;
    this.location = location;
    this.enumerable = enumerable;
    this.visible = visible;
    this.writer = writer;
    this.mtime = mtime;
    this.children =
        type.isContainer() ? (enumerable ? new TreeMap<>() : new HashMap<>()) : Map.of();
  }

  /** Logical blocks mapped (each {@link #replicas} slots). */
  int count() {
    return blocks.size() / replicas;
  }

  /** Whether every copy of logical block {@code i} is lost. */
  boolean blockLost(int i) {
    int from = i * replicas;
    return lost.nextClearBit(from) >= from + replicas;
  }

  /** The path of an attached node. */
  String path() {
    if (parent == null) {
      return "/";
    }
    StringBuilder sb = new StringBuilder();
    for (Node n = this; n.parent != null; n = n.parent) {
      sb.insert(0, n.name).insert(0, '/');
    }
    return sb.toString();
  }

  /** The owner name of the node's blocks in the kernel's allocator. */
  static String owner(long id) {
    return "nodes:" + id;
  }
}
