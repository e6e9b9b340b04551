package io.ferrite.tree;

/**
 * Where a {@link MeganodeReader} gets copies of one meganode's small nodes and of the key-value
 * extents its leaves point to: the server's own region (server-side search) or one-sided reads over
 * a fabric (client-side search). A copy may be torn by a concurrent server write; the reader
 * verifies every copy (version words for nodes, the pointer's checksum for extents) and reads
 * again, so an implementation need not synchronize with the writer beyond reading the first version
 * word before the body and the last one after it (Cell §2.3: RDMA reads copy in address order).
 */
public interface NodeSource {
  /** The node size in bytes, {@code tree.node.size}. */
  int nodeSize();

  /** Copies node {@code index} (node size bytes, node 0 the meganode header) into {@code dst}. */
  void readNode(int index, byte[] dst);

  /**
   * A copy of the {@code length} bytes of the extent at {@code address} (region << 32 | offset).
   */
  byte[] readExtent(long address, int length);
}
