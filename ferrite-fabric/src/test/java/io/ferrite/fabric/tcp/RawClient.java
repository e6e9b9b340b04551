package io.ferrite.fabric.tcp;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Frames;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A hand-written client over a plain {@link Socket}, written from the {@link Frames} Javadoc alone
 * (not from the fabric's code), for feeding a server bytes no well-behaved client would send.
 */
final class RawClient implements AutoCloseable {
  final Socket socket;
  private final OutputStream out;
  private final DataInputStream in;

  RawClient(InetSocketAddress at) throws IOException {
    socket = new Socket();
    socket.setTcpNoDelay(true);
    socket.connect(at, 2000);
    socket.setSoTimeout(5000);
    out = socket.getOutputStream();
    in = new DataInputStream(socket.getInputStream());
  }

  static InetSocketAddress addressOf(String tcpAddress) {
    return TcpFabric.parse(tcpAddress, "tcp");
  }

  void send(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
  }

  /** A frame as bytes: header with {@code frameLength = 12 + body.length}. */
  static byte[] frame(int type, int flags, int status, long requestId, byte[] body) {
    ByteBuffer b = ByteBuffer.allocate(16 + body.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(12 + body.length).put((byte) type).put((byte) flags).putShort((short) status);
    b.putLong(requestId).put(body);
    return b.array();
  }

  static byte[] regionOp(int regionId, long rkey, long offset, int extra) {
    ByteBuffer b = ByteBuffer.allocate(24 + extra).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(regionId).putInt(0).putLong(rkey).putLong(offset);
    return b.array();
  }

  static byte[] read(int regionId, long rkey, long offset, int len) {
    byte[] body = regionOp(regionId, rkey, offset, 4);
    ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN).putInt(24, len);
    return body;
  }

  /** One received frame. */
  record Frame(int type, int flags, int status, long requestId, byte[] body) {
    String text() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  Frame receive() throws IOException {
    byte[] h = new byte[16];
    in.readFully(h);
    ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
    int len = b.getInt();
    byte[] body = new byte[len - 12];
    int type = b.get() & 0xff;
    int flags = b.get() & 0xff;
    int status = b.getShort() & 0xffff;
    long id = b.getLong();
    in.readFully(body);
    return new Frame(type, flags, status, id, body);
  }

  /** True if the server closed the connection (EOF or reset) within the socket timeout. */
  boolean closedByServer() throws IOException {
    try {
      InputStream s = socket.getInputStream();
      byte[] sink = new byte[4096];
      while (true) {
        if (s.read(sink) < 0) {
          return true;
        }
      }
    } catch (SocketException | EOFException e) {
      return true;
    } catch (SocketTimeoutException e) {
      return false;
    }
  }

  /** Performs the handshake with {@code credentials}; returns the server's node id. */
  int handshake(Credentials credentials) throws IOException {
    SecureRandom rnd = new SecureRandom();
    byte[] clientNonce = new byte[16];
    rnd.nextBytes(clientNonce);
    byte[] id = credentials.clusterId().getBytes(StandardCharsets.UTF_8);
    int role = credentials.role().wire();
    byte[] secret = credentials.secret();
    byte[] check = hmac(secret, "ferrite-hello", role, clientNonce, new byte[0]);
    ByteBuffer hello =
        ByteBuffer.allocate(8 + id.length + 16 + 1 + 32).order(ByteOrder.LITTLE_ENDIAN);
    hello.putInt(Frames.MAGIC).putShort((short) Frames.PROTOCOL_VERSION);
    hello.putShort((short) id.length).put(id).put(clientNonce).put((byte) role).put(check);
    send(frame(Frames.TYPE_HELLO, 0, 0, 0, hello.array()));
    Frame rsp = receive();
    if (rsp.status() != 0) {
      throw new IOException("HELLO refused: " + rsp.text());
    }
    ByteBuffer r = ByteBuffer.wrap(rsp.body()).order(ByteOrder.LITTLE_ENDIAN);
    int nodeId = r.getInt();
    byte[] serverNonce = new byte[16];
    r.get(serverNonce);
    byte[] proof = hmac(secret, "ferrite-client", role, serverNonce, clientNonce);
    send(frame(Frames.TYPE_AUTH, 0, 0, 0, proof));
    Frame auth = receive();
    if (auth.status() != 0) {
      throw new IOException("AUTH refused: " + auth.text());
    }
    return nodeId;
  }

  /** HMAC-SHA256(secret, label | role u8 | a | b), as docs {@code Frames} spell it. */
  static byte[] hmac(byte[] secret, String label, int role, byte[] a, byte[] b) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(label.getBytes(StandardCharsets.US_ASCII));
      mac.update((byte) role);
      mac.update(a);
      mac.update(b);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
