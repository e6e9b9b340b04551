package io.ferrite.tree;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;

/**
 * A meganode as a client reaches it one-sided: its node region and extent regions (read keys only),
 * learned by one LAYOUT call and refreshed when a leaf points into an extent region this copy of
 * the layout does not list yet (the meganode grew one). Reads are plain one-sided reads, possibly
 * torn; {@link MeganodeReader} verifies them. Thread-safe (the layout is immutable, swapped whole).
 */
final class RemoteMeganode implements NodeSource {
  private record Layout(int nodeSize, RegionRef nodes, RegionRef[] extents) {}

  private final FerriteClient client;
  private final long pointer;
  private volatile Layout layout;

  RemoteMeganode(FerriteClient client, long pointer) {
    this.client = client;
    this.pointer = pointer;
    this.layout = fetch();
  }

  private Layout fetch() {
    ByteBuffer b =
        client.callSync(
            TreeProtocol.server(pointer),
            TreeProtocol.SERVER_SERVICE,
            TreeProtocol.LAYOUT,
            new Wire.Writer().i32(TreeProtocol.region(pointer)).toBuffer());
    Wire.Reader r = new Wire.Reader(b, "tree layout");
    int nodeSize = r.i32("nodeSize");
    RegionRef nodes = ref(r);
    int n = r.u16("extents");
    RegionRef[] extents = new RegionRef[n];
    for (int i = 0; i < n; i++) {
      extents[i] = ref(r);
    }
    r.end();
    return new Layout(nodeSize, nodes, extents);
  }

  private static RegionRef ref(Wire.Reader r) {
    return new RegionRef(r.i32("server"), r.i32("region"), r.i64("key"), r.i64("length"));
  }

  @Override
  public int nodeSize() {
    return layout.nodeSize();
  }

  @Override
  public void readNode(int index, byte[] dst) {
    Layout l = layout;
    long offset = (long) index * l.nodeSize();
    if (index < 0 || offset + l.nodeSize() > l.nodes().length()) {
      // A garbage index from a torn copy that decoded: nothing to read, so the copy fails its
      // version check (all zero words would pass: poison them).
      java.util.Arrays.fill(dst, (byte) 1);
      return;
    }
    Futures.join(
        client
            .connection(TreeProtocol.server(pointer))
            .read(l.nodes(), offset, ByteBuffer.wrap(dst)));
  }

  @Override
  public byte[] readExtent(long address, int length) {
    int region = (int) (address >>> 32);
    long offset = address & 0xFFFFFFFFL;
    Layout l = layout;
    if (region >= l.extents().length) {
      l = fetch();
      layout = l;
    }
    byte[] e = new byte[length];
    if (region < l.extents().length && offset + length <= l.extents()[region].length()) {
      Futures.join(
          client
              .connection(TreeProtocol.server(pointer))
              .read(l.extents()[region], offset, ByteBuffer.wrap(e)));
    }
    return e;
  }
}
