package io.ferrite.nodes;

import java.io.IOException;
import java.io.InputStream;
import java.util.Iterator;

/**
 * All files of a Bag read as one stream, in name order (paper §3.1). The listing pages carry each
 * file's block refs, so crossing a file boundary costs no lookup and no map RPC: one listing RPC
 * per {@value NodesProtocol#MAX_LIST_PAGE} files instead of a lookup per file.
 */
public final class BagInputStream extends InputStream {
  private final Nodes nodes;
  private final Iterator<NodeInfo> files;
  private NodeReader.SeekableInputStream current;
  private boolean closed;

  BagInputStream(Nodes nodes, String path) {
    this.nodes = nodes;
    this.files = nodes.list(path, true).iterator();
  }

  private boolean advance() {
    while (files.hasNext()) {
      NodeInfo f = files.next();
      if (f.size() > 0) {
        current = new NodeReader(nodes, f).inputStream();
        return true;
      }
    }
    current = null;
    return false;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException(new NodesException(NodesException.Reason.CLOSED, "stream closed"));
    }
  }

  /** Closes the part being read (its reads ahead); idempotent. Reads then fail with CLOSED. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (current != null) {
      current.close();
      current = null;
    }
  }

  @Override
  public int read() throws IOException {
    checkOpen();
    while (current != null || advance()) {
      int b = current.read();
      if (b >= 0) {
        return b;
      }
      current = null;
    }
    return -1;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    checkOpen();
    if (len == 0) {
      return 0;
    }
    while (current != null || advance()) {
      int n = current.read(b, off, len);
      if (n > 0) {
        return n;
      }
      current = null;
    }
    return -1;
  }
}
