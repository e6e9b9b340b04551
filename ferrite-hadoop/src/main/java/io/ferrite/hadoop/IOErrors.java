package io.ferrite.hadoop;

import io.ferrite.fabric.FerriteException;
import io.ferrite.nodes.NodesException;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.PathIOException;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;

/**
 * Turns a failure of the nodes face into the {@link IOException} a Hadoop caller expects (the
 * FileSystem specification's exception types), keeping the Ferrite failure as the cause, so its
 * {@link NodesException.Reason} and {@link FerriteException#retryable()} stay reachable.
 *
 * <table>
 *   <caption>reason to exception</caption>
 *   <tr><td>NOT_FOUND</td><td>{@link FileNotFoundException}</td></tr>
 *   <tr><td>ALREADY_EXISTS</td><td>{@link FileAlreadyExistsException}</td></tr>
 *   <tr><td>NOT_A_CONTAINER, WRONG_CONTAINER</td><td>{@link ParentNotDirectoryException} (a file,
 *       a Table or a Bag where a directory was needed)</td></tr>
 *   <tr><td>NOT_EMPTY</td><td>{@link PathIsNotEmptyDirectoryException}</td></tr>
 *   <tr><td>PAST_END</td><td>{@link EOFException}</td></tr>
 *   <tr><td>any other reason</td><td>{@link PathIOException}</td></tr>
 *   <tr><td>a kernel failure (unavailable, timeout, auth, session)</td><td>{@link
 *       IOException}</td></tr>
 * </table>
 */
final class IOErrors {
  private IOErrors() {}

  /** The nodes reason of {@code e}, or null for a kernel failure. */
  static NodesException.Reason reason(RuntimeException e) {
    return NodesException.from(e) instanceof NodesException n ? n.reason() : null;
  }

  /**
   * {@code e} as an IOException about {@code path} during {@code op} (e.g. {@code "open"}). A
   * runtime exception that is not a Ferrite failure (a bug, a bad argument) is rethrown as it is.
   */
  static IOException translate(RuntimeException e, String op, String path) {
    Throwable inner = e;
    while (inner instanceof java.util.concurrent.CompletionException && inner.getCause() != null) {
      inner = inner.getCause();
    }
    if (!(inner instanceof FerriteException)) {
      throw e;
    }
    FerriteException f = NodesException.from(inner);
    String what = op + " " + path + ": " + f.getMessage();
    if (!(f instanceof NodesException n)) {
      return new IOException(what, f);
    }
    IOException out;
    switch (n.reason()) {
      case NOT_FOUND -> out = new FileNotFoundException(what);
      case ALREADY_EXISTS -> out = new FileAlreadyExistsException(what);
      case NOT_A_CONTAINER, WRONG_CONTAINER -> out = new ParentNotDirectoryException(what);
      case PAST_END -> out = new EOFException(what);
      case NOT_EMPTY -> {
        return new PathIsNotEmptyDirectoryException(path); // its constructors take no cause
      }
      default -> {
        return new PathIOException(path, op + ": " + f.getMessage(), f);
      }
    }
    out.initCause(f);
    return out;
  }
}
