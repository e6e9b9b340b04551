package io.ferrite.tree;

/**
 * The tree face's opcodes and wire layouts (little-endian, {@link io.ferrite.kernel.proto.Wire}:
 * {@code str} and {@code bytes} are a u32 length then the bytes). Service id 44 on the master (the
 * tree directory) and on every memory server (the tree service).
 *
 * <p>A <b>meganode pointer</b> is an i64 {@code server << 32 | meganode id}: the memory server
 * holding the meganode and the meganode's id on it (Cell §2.2 names a region id and offset; here
 * the low word is an id the server hands out and keeps across restarts, mapped to the meganode's
 * current region, which LAYOUT names: a server that replays its tree log rebuilds meganodes in new
 * regions and every pointer stays valid). The {@code region} fields of the requests below carry
 * that id.
 *
 * <h2>Master (the tree directory, journaled)</h2>
 *
 * <pre>
 *  CREATE_TREE  str name                       -> i64 id, i32 server, i64 root
 *  GET_TREE     str name                       -> i64 id, i32 server, i64 root   (NOT_FOUND)
 *  LIST_TREES   -                              -> u32 n, n x (str name, i64 id, i32 server, i64 root)
 *  DROP_TREE    str name                       -> u8 dropped
 *  SET_ROOT     i64 id, i64 root               -> -        (from the tree's server only)
 * </pre>
 *
 * {@code root} is 0 until the tree's server made its first meganode (OPEN_TREE).
 *
 * <h2>Memory server (the tree service)</h2>
 *
 * <pre>
 *  OPEN_TREE    i64 id                          -> i64 root
 *  LAYOUT       i32 region                      -> i32 nodeSize, ref meganode,
 *                                                  u16 n, n x ref extent region
 *               ref = i32 server, i32 region, i64 readKey, i64 length
 *  SEARCH       i32 region, bytes key           -> u8 outcome [bytes value | i64 pointer]
 *  MULTI_SEARCH i32 region, u32 n, n x bytes key -> u32 n, n x (u8 outcome [bytes value
 *                                                  | i64 pointer]), as SEARCH, in key order
 *  PUT          i32 region, bytes key, bytes value -> u8 outcome [i64 pointer]
 *  DELETE       i32 region, bytes key           -> u8 outcome [i64 pointer]
 *  SCAN         i32 region, bytes from, u8 hasTo [bytes to], i32 limit
 *                                               -> u8 outcome: NEXT | RIGHT i64 pointer
 *                                                  | PART u32 n, n x (bytes key, bytes value),
 *                                                    i64 next [bytes resume if next != 0]
 *  STATS        i64 id                          -> i32 meganodes, i32 levels, i64 splits,
 *                                                  i64 nodes in use, i64 node capacity,
 *                                                  i32 pending (adopted, awaiting the source's
 *                                                  CONFIRM or DROP: docs/TREE.md)
 *  DROP_TREE    i64 id                          -> u8 dropped
 * </pre>
 *
 * <h2>Memory server to memory server (role SERVER or ADMIN; a CLIENT gets PERMISSION_DENIED)</h2>
 *
 * A leaf meganode split that puts its right half on another server (docs/TREE.md "Meganodes on
 * several servers"); {@code token} names the split on its source server:
 *
 * <pre>
 *  ADOPT        i64 tree, i32 home, i32 source, i32 token, i32 level, bytes low,
 *               u8 hasHigh [bytes high], i64 link  -> i64 pointer   (a new pending meganode)
 *  ADOPT_PUT    i32 region, u32 n, n x (bytes key, bytes value) -> -   (pairs in key order)
 *  CONFIRM      i32 region                      -> -       (its source ended the split: keep)
 *  DROP_ADOPTED i32 source, i32 token           -> u8 dropped  (its source did not end it)
 *  RESOLVE      i32 token                       -> u8 0 drop | 1 keep | 2 wait  (asked of a source)
 *  INSERT_CHILD i64 tree, i32 level, bytes key, i64 child -> -   (to the tree's home: queued)
 * </pre>
 *
 * SEARCH, MULTI_SEARCH and SCAN go on, on the server, through the meganodes that server holds
 * (children, right links, a scan's next leaf meganode): their answer may come from a meganode below
 * or right of the one named, and a pointer in it is the first meganode on another server.
 *
 * <p>Outcomes: {@link #VALUE} (SEARCH: the value follows), {@link #ABSENT}, {@link #NEXT} (go on at
 * the meganode pointer that follows: the child of an internal meganode, or where the server stopped
 * going on), {@link #RIGHT} (the key is past the named meganode's range: go on at its right
 * meganode — the B-link tree of meganodes), {@link #RESTART} (the key is below this meganode's
 * range: start again from the root), {@link #CREATED}, {@link #REPLACED}, {@link #DELETED}, {@link
 * #PART} (SCAN: pairs of this leaf meganode, and where to go on). A write answered NEXT, RIGHT or
 * RESTART did nothing.
 */
public final class TreeProtocol {
  public static final int MASTER_SERVICE = 44;
  public static final int SERVER_SERVICE = 44;

  public static final int CREATE_TREE = 1;
  public static final int GET_TREE = 2;
  public static final int LIST_TREES = 3;
  public static final int DROP_TREE_MASTER = 4;
  public static final int SET_ROOT = 5;

  public static final int OPEN_TREE = 1;
  public static final int LAYOUT = 2;
  public static final int SEARCH = 3;
  public static final int PUT = 4;
  public static final int DELETE = 5;
  public static final int SCAN = 6;
  public static final int STATS = 7;
  public static final int DROP_TREE = 8;
  public static final int MULTI_SEARCH = 9;
  public static final int ADOPT = 10;
  public static final int ADOPT_PUT = 11;
  public static final int CONFIRM = 12;
  public static final int DROP_ADOPTED = 13;
  public static final int RESOLVE = 14;
  public static final int INSERT_CHILD = 15;

  /** The most keys one MULTI_SEARCH may hold. */
  public static final int MAX_MULTI_KEYS = 1024;

  public static final int VALUE = 0;
  public static final int ABSENT = 1;
  public static final int NEXT = 2;
  public static final int RESTART = 3;
  public static final int CREATED = 4;
  public static final int REPLACED = 5;
  public static final int DELETED = 6;
  public static final int PART = 7;
  public static final int RIGHT = 8;

  private TreeProtocol() {}

  /** A meganode pointer. */
  public static long pointer(int server, int region) {
    return (long) server << 32 | (region & 0xFFFFFFFFL);
  }

  public static int server(long pointer) {
    return (int) (pointer >>> 32);
  }

  public static int region(long pointer) {
    return (int) pointer;
  }
}
