package io.ferrite.fabric.netty;

import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.Socket;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code dup(2)} for a socket, which Netty's native library does not expose: the descriptor is
 * passed to ourselves over a private Unix socket ({@code SCM_RIGHTS}), and what arrives is a second
 * descriptor of the same open socket. A few system calls, once per connection.
 *
 * <p>Why: {@link ClientWriter} writes from caller threads. Netty closes its own descriptor on its
 * event loop whenever it likes (an error, the peer's close); a caller writing to that number a
 * moment later could hit whatever file or socket reused it. A duplicate is closed only by its
 * owner, under its write lock, so it cannot be reused under a writer; the socket itself stays open
 * until both descriptors are closed.
 */
final class FdDup {
  private FdDup() {}

  /** A new descriptor of the same open file as {@code fd}; the caller closes it. */
  static FileDescriptor dup(FileDescriptor fd) throws IOException {
    Path dir = Files.createTempDirectory("ferrite-fd-");
    Path path = dir.resolve("s");
    Socket listener = Socket.newSocketDomain();
    Socket sender = null;
    Socket receiver = null;
    try {
      DomainSocketAddress address = new DomainSocketAddress(path.toString());
      listener.bind(address);
      listener.listen(1);
      sender = Socket.newSocketDomain();
      // A Unix-domain connect to a listening socket with room in its backlog completes at once.
      if (!sender.connect(address) && !sender.finishConnect()) {
        throw new IOException("connect to " + path + " did not complete");
      }
      // Room for the peer address the call reports (a sockaddr_un is at most 110 bytes).
      int accepted = listener.accept(new byte[128]);
      if (accepted < 0) {
        throw new IOException("accept on " + path + " found no connection");
      }
      receiver = new Socket(accepted);
      if (sender.sendFd(fd.intValue()) <= 0) {
        throw new IOException("could not pass descriptor " + fd.intValue());
      }
      int copy = receiver.recvFd();
      if (copy <= 0) {
        throw new IOException("no descriptor received (" + copy + ")");
      }
      return new FileDescriptor(copy);
    } finally {
      closeQuietly(receiver);
      closeQuietly(sender);
      closeQuietly(listener);
      Files.deleteIfExists(path);
      Files.deleteIfExists(dir);
    }
  }

  private static void closeQuietly(FileDescriptor fd) {
    if (fd != null) {
      try {
        fd.close();
      } catch (IOException e) {
        // Nothing was written through it; the descriptor is gone either way.
      }
    }
  }
}
