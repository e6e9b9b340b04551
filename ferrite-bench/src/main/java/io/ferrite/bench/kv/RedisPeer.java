package io.ferrite.bench.kv;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} this benchmark starts on 127.0.0.1 (no persistence, no snapshots; or, for
 * the {@code always} rows, an append-only file fsynced before each reply) and a minimal RESP client
 * for it: one connection per benchmark thread, each issuing blocking commands (or a pipelined
 * batch), as each Ferrite thread issues blocking gets. Install the server with {@code apt-get
 * install redis-server}.
 */
public final class RedisPeer implements AutoCloseable {
  private final Process process;
  private final int port;
  private final List<Conn> conns = new ArrayList<>();

  private RedisPeer(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  /** The redis-server binary on the PATH, or null. */
  public static Path binary() {
    for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
      Path p = Path.of(d, "redis-server");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  public static RedisPeer start(Path workDir) throws IOException, InterruptedException {
    return start(workDir, false);
  }

  /**
   * Starts redis-server with its working directory {@code workDir}; {@code aofAlways}: with {@code
   * --appendonly yes --appendfsync always} (every write fsynced to {@code workDir}'s append-only
   * file before the reply: the peer of a kv table with durability {@code always} whose log is on
   * the same file system).
   */
  static RedisPeer start(Path workDir, boolean aofAlways) throws IOException, InterruptedException {
    Path bin = binary();
    if (bin == null) {
      throw new IOException(
          "--vs redis: no redis-server on the PATH (install it: apt-get install redis-server)");
    }
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Process p =
        new ProcessBuilder(
                bin.toString(),
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                aofAlways ? "yes" : "no",
                "--appendfsync",
                aofAlways ? "always" : "everysec",
                "--dir",
                workDir.toString())
            .redirectErrorStream(true)
            .redirectOutput(workDir.resolve(aofAlways ? "redis-aof.log" : "redis.log").toFile())
            .start();
    RedisPeer peer = new RedisPeer(p, port);
    // A benchmark stopped by a signal must not leave its redis-server running.
    Runtime.getRuntime().addShutdownHook(new Thread(p::destroy, "redis-peer-stop"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try (Conn c = peer.new Conn()) {
        c.send("PING");
        c.readReply();
        return peer;
      } catch (IOException | UncheckedIOException e) {
        if (System.nanoTime() > deadline || !p.isAlive()) {
          peer.close();
          throw new IOException("redis-server did not answer on port " + port, e);
        }
        Thread.sleep(50);
      }
    }
  }

  /** The redis-server process's id (probes read its CPU time from /proc). */
  public long pid() {
    return process.pid();
  }

  /** A new connection, closed with the peer. */
  public synchronized Conn connect() {
    try {
      Conn c = new Conn();
      conns.add(c);
      return c;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    synchronized (this) {
      for (Conn c : conns) {
        c.close();
      }
      conns.clear();
    }
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** One RESP connection; confined to one thread. */
  public final class Conn implements AutoCloseable {
    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;

    Conn() throws IOException {
      socket = new Socket();
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress("127.0.0.1", port), 2000);
      out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
      in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
    }

    private void bulk(byte[] b) throws IOException {
      out.write(('$' + Integer.toString(b.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(b);
      out.write('\r');
      out.write('\n');
    }

    /** Queues one command (not flushed). */
    public void command(byte[]... args) {
      try {
        out.write(
            ('*' + Integer.toString(args.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (byte[] a : args) {
          bulk(a);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    void send(String cmd) throws IOException {
      command(cmd.getBytes(StandardCharsets.US_ASCII));
      out.flush();
    }

    public void flush() {
      try {
        out.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    private String line() throws IOException {
      StringBuilder sb = new StringBuilder();
      int c;
      while ((c = in.read()) != '\r') {
        if (c < 0) {
          throw new IOException("redis closed the connection");
        }
        sb.append((char) c);
      }
      in.read();
      return sb.toString();
    }

    /** Reads one reply: a bulk string's bytes, null for a nil, or the status/integer text. */
    public byte[] readReply() {
      try {
        String l = line();
        switch (l.charAt(0)) {
          case '$' -> {
            int n = Integer.parseInt(l.substring(1));
            if (n < 0) {
              return null;
            }
            byte[] b = in.readNBytes(n);
            in.readNBytes(2);
            return b;
          }
          case '-' -> throw new IOException("redis error: " + l);
          default -> {
            return l.substring(1).getBytes(StandardCharsets.US_ASCII);
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Reads one array reply of bulk strings (ZRANGEBYLEX); returns how many it held. */
    public int readArray() {
      try {
        String l = line();
        if (l.charAt(0) != '*') {
          throw new IOException("redis: expected an array, got " + l);
        }
        int n = Integer.parseInt(l.substring(1));
        for (int i = 0; i < n; i++) {
          readReply();
        }
        return Math.max(0, n);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // Closing anyway.
      }
    }
  }
}
