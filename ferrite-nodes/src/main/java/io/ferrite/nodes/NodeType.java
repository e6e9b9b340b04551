package io.ferrite.nodes;

/**
 * The five node types of NodeKernel (paper §3.1), with their stacking rules: Files live in
 * Directories and Bags, KeyValues only in Tables; Directories nest arbitrarily (the root is a
 * Directory); Bags and Tables are flat and live in Directories.
 */
public enum NodeType {
  /** Bytes; the first create of a path wins; append, positional reads; one writer at a time. */
  FILE(1, false, "file"),
  /** A container of Files and Directories, nested arbitrarily. */
  DIRECTORY(2, true, "directory"),
  /** Bytes; a create on an existing path replaces it atomically (last put wins). */
  KEYVALUE(3, false, "keyvalue"),
  /** A flat container of KeyValues; may be non-enumerable. */
  TABLE(4, true, "table"),
  /** A flat container of Files that reads as one stream through all of them. */
  BAG(5, true, "bag");

  private final int wire;
  private final boolean container;
  private final String label;

  NodeType(int wire, boolean container, String label) {
    this.wire = wire;
    this.container = container;
    this.label = label;
  }

  public int wire() {
    return wire;
  }

  public boolean isContainer() {
    return container;
  }

  /** Whether this node holds bytes (File, KeyValue). */
  public boolean hasData() {
    return !container;
  }

  /** The lower-case name, as the CLI prints it. */
  public String label() {
    return label;
  }

  /** Whether a node of type {@code child} may be created directly inside a node of this type. */
  public boolean accepts(NodeType child) {
    switch (this) {
      case DIRECTORY:
        return child == FILE || child == DIRECTORY || child == TABLE || child == BAG;
      case TABLE:
        return child == KEYVALUE;
      case BAG:
        return child == FILE;
      default:
        return false;
    }
  }

  /** What a container of this type accepts, for error messages. */
  public String acceptsDescription() {
    switch (this) {
      case DIRECTORY:
        return "files, directories, tables and bags";
      case TABLE:
        return "keyvalues only";
      case BAG:
        return "files only";
      default:
        return "nothing (not a container)";
    }
  }

  public static NodeType fromWire(int wire) {
    for (NodeType t : values()) {
      if (t.wire == wire) {
        return t;
      }
    }
    throw new NodesException(NodesException.Reason.INVALID_ARGUMENT, "node type: " + wire);
  }
}
