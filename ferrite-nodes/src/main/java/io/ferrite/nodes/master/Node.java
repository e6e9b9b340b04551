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
  final List<BlockRef> blocks = new ArrayList<>();

  /**
   * Indices into {@link #blocks} whose memory is gone (the kernel declared their region lost): the
   * refs stay where they were, so indices keep meaning bytes {@code [i * blockSize, (i + 1) *
   * blockSize)}, but they are no longer allocated to this node and are never read, written or
   * freed.
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
