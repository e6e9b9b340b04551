package io.ferrite.hadoop;

import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException.Reason;
import java.io.FileNotFoundException;
import java.io.IOException;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.PathIOException;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;

/**
 * Hadoop's namespace semantics (create, mkdirs, rename, delete) made of the nodes face's
 * operations, on nodes paths. Every nodes operation is atomic on the master; what Hadoop asks for
 * beyond one of them (make missing parents, replace an existing file, move into a directory) is a
 * short sequence that retries a bounded number of times when another client changed the namespace
 * in between, and otherwise reports what it found.
 */
final class NamespaceOps {
  private final Nodes nodes;

  NamespaceOps(Nodes nodes) {
    this.nodes = nodes;
  }

  NodeInfo lookup(String p, String op) throws IOException {
    try {
      return nodes.lookup(p);
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, op, p);
    }
  }

  /** The node at {@code p}, or null if there is none. */
  NodeInfo lookupOrNull(String p, String op) throws IOException {
    try {
      return nodes.lookup(p);
    } catch (RuntimeException e) {
      if (IOErrors.reason(e) == Reason.NOT_FOUND) {
        return null;
      }
      throw IOErrors.translate(e, op, p);
    }
  }

  /** Times create retries after losing a race (a file removed or created under it). */
  static final int CREATE_ATTEMPTS = 4;

  /**
   * A writer of a new, empty, already published File at {@code p}: visible as soon as this returns.
   * With {@code overwrite} an existing file is removed first (not atomic: a reader may find no file
   * in between); a container is never replaced. With {@code parents} missing parents are made.
   * {@code options}: the File's (its replicas).
   */
  NodeWriter createWriter(String p, boolean overwrite, boolean parents, CreateOptions options)
      throws IOException {
    if (p.equals("/")) {
      throw new FileAlreadyExistsException("/ is the root directory");
    }
    for (int attempt = 1; ; attempt++) {
      NodeWriter w;
      try {
        w = nodes.create(p, options);
      } catch (RuntimeException e) {
        Reason r = IOErrors.reason(e);
        if (attempt == CREATE_ATTEMPTS || (r != Reason.ALREADY_EXISTS && r != Reason.NOT_FOUND)) {
          throw IOErrors.translate(e, "create", p);
        }
        if (r == Reason.NOT_FOUND) { // the parent is missing
          if (!parents) {
            throw new FileNotFoundException("create " + p + ": its parent does not exist");
          }
          mkdirs(NodePath.parent(p), "create");
          continue;
        }
        NodeInfo old = lookupOrNull(p, "create");
        if (old == null) {
          continue; // removed meanwhile, or being created (unpublished) by another writer
        }
        if (old.type().isContainer()) {
          throw new FileAlreadyExistsException(p + " is a " + old.type().label());
        }
        if (!overwrite) {
          throw new FileAlreadyExistsException(p + " exists");
        }
        try {
          nodes.remove(p, false);
        } catch (RuntimeException gone) {
          if (IOErrors.reason(gone) != Reason.NOT_FOUND) {
            throw IOErrors.translate(gone, "overwrite", p);
          }
        }
        continue;
      }
      try {
        w.flush(); // publish the empty file: visible from now on, as Hadoop expects
        return w;
      } catch (RuntimeException e) {
        try {
          w.abort();
        } catch (RuntimeException again) {
          e.addSuppressed(again);
        }
        throw IOErrors.translate(e, "create", p);
      }
    }
  }

  /** Hadoop's rename of {@code s} to {@code d}: see {@link FerriteFileSystem}. */
  boolean rename(String s, String d) throws IOException {
    if (s.equals("/")) {
      return false;
    }
    if (s.equals(d)) {
      return lookupOrNull(s, "rename") != null; // onto itself: nothing to do
    }
    NodeInfo target = lookupOrNull(d, "rename");
    if (target != null) {
      if (!target.type().isContainer()) {
        return false; // onto an existing file
      }
      d = NodePath.join(d, NodePath.name(s)); // into an existing directory
      if (s.equals(d)) {
        return lookupOrNull(s, "rename") != null; // into the directory it is in: nothing to do
      }
    }
    try {
      nodes.move(s, d);
      return true;
    } catch (RuntimeException e) {
      Reason r = IOErrors.reason(e);
      if (r == Reason.INVALID_MOVE) {
        throw new PathIOException(s, "cannot rename a directory into its own subtree " + d);
      }
      if (r == Reason.NOT_FOUND // source, or the destination's parent, missing
          || r == Reason.ALREADY_EXISTS
          || r == Reason.NOT_A_CONTAINER // the destination's parent is a file
          || r == Reason.WRONG_CONTAINER) { // e.g. a directory into a Table
        return false;
      }
      throw IOErrors.translate(e, "rename " + s + " to", d);
    }
  }

  /** Hadoop's delete: false if nothing is at {@code p}. */
  boolean delete(String p, boolean recursive) throws IOException {
    if (p.equals("/")) {
      return deleteRoot(recursive);
    }
    try {
      nodes.remove(p, recursive);
      return true;
    } catch (RuntimeException e) {
      Reason r = IOErrors.reason(e);
      if (r == Reason.NOT_FOUND) {
        return false;
      }
      throw IOErrors.translate(e, "delete", p);
    }
  }

  /** The root is never removed: true if it is empty, false if recursive, else not empty. */
  private boolean deleteRoot(boolean recursive) throws IOException {
    boolean empty;
    try {
      empty = !nodes.list("/").iterator().hasNext();
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, "delete", "/");
    }
    if (empty) {
      return true;
    }
    if (recursive) {
      return false;
    }
    throw new PathIsNotEmptyDirectoryException("/");
  }

  /**
   * Makes {@code p} and its missing parents: one RPC when the parent exists, one more per missing
   * level. An existing directory (or Table or Bag) is fine; an existing file is not.
   */
  void mkdirs(String p, String op) throws IOException {
    if (p.equals("/")) {
      return;
    }
    for (int attempt = 1; ; attempt++) {
      try {
        nodes.mkdir(p);
        return;
      } catch (RuntimeException e) {
        Reason r = IOErrors.reason(e);
        if (attempt == CREATE_ATTEMPTS || (r != Reason.ALREADY_EXISTS && r != Reason.NOT_FOUND)) {
          throw IOErrors.translate(e, op, p);
        }
        if (r == Reason.NOT_FOUND) {
          mkdirs(NodePath.parent(p), op);
          continue;
        }
        NodeInfo old = lookupOrNull(p, op);
        if (old == null) {
          continue;
        }
        if (old.type().isContainer()) {
          return;
        }
        throw new FileAlreadyExistsException(
            op + " " + p + ": exists and is a " + old.type().label() + ", not a directory");
      }
    }
  }
}
