package io.ferrite.kernel.proto;

import java.util.ArrayList;
import java.util.List;

/**
 * The kernel's own service on every memory server, called by the master.
 *
 * <pre>
 * REVOKE (1)  master -> count i32 | { regionId i32 | blockIndex i32 | generation i32 }*
 *             server <- (empty)
 * </pre>
 *
 * REVOKE installs each block's key for {@code generation} ({@link BlockKeyMint}) in place of the
 * one it had, so every key handed out for an earlier generation stops at once, on every fabric. A
 * server ignores a generation lower than the one it has (a late retry). The master sends it after a
 * block is freed and before it answers the FREE, and holds the block out of allocation until a
 * REVOKE succeeded or the server registered again (REGISTER's answer carries every generation).
 *
 * <p>Only the master may call it: it must be refused to clients once callers have roles (see {@code
 * docs/SECURITY.md}).
 */
public final class ServerProtocol {
  private ServerProtocol() {}

  /** The service id, in the kernel's reserved range (1: the master's). */
  public static final int SERVICE = 2;

  public static final int REVOKE = 1;

  /** One block's new generation. */
  public record Revoke(int regionId, int blockIndex, int generation) {}

  public static Wire.Writer writeRevokes(List<Revoke> revokes) {
    Wire.Writer w = new Wire.Writer(4 + 12 * revokes.size()).i32(revokes.size());
    for (Revoke r : revokes) {
      w.i32(r.regionId()).i32(r.blockIndex()).i32(r.generation());
    }
    return w;
  }

  public static List<Revoke> readRevokes(Wire.Reader r) {
    int n = r.count("count", MasterProtocol.MAX_LIST);
    List<Revoke> out = new ArrayList<>(Math.min(n, 1024));
    for (int i = 0; i < n; i++) {
      out.add(new Revoke(r.i32("regionId"), r.i32("blockIndex"), r.i32("generation")));
    }
    r.end();
    return out;
  }
}
