package io.ferrite.bench.tx;

import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxProtocol;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * For the bench's ceilings: the memory servers, and per tx region its primary and its read
 * capability, which {@link io.ferrite.tx.TxClient} keeps to itself: asked as the client asks them,
 * the primary from the master ({@code GET_REGION}), the capability from the primary ({@code
 * OPEN_REGION}: fabric region, read key, length). Not thread-safe.
 */
final class RegionProbe {
  /** A region's primary and the capability it answered. */
  record Opened(int server, RegionRef ref) {}

  private final FerriteClient client;
  private final Map<Integer, Opened> regions = new HashMap<>();
  private final List<Integer> servers = new ArrayList<>();

  RegionProbe(FerriteClient client) {
    this.client = client;
    client.members().forEach(m -> servers.add(m.serverId()));
  }

  /** Every memory server's id. */
  List<Integer> servers() {
    return servers;
  }

  /** The primary of {@code p}'s region. */
  int primary(FatPointer p) {
    return open(p).server();
  }

  /** The read capability of {@code p}'s region, at its primary. */
  RegionRef ref(FatPointer p) {
    return open(p).ref();
  }

  private Opened open(FatPointer p) {
    Opened o = regions.get(p.region());
    if (o != null) {
      return o;
    }
    // The master's placement: region, primary, backups[], opened (TxDirectory's answer).
    Wire.Reader m =
        new Wire.Reader(
            client.callMasterSync(
                TxProtocol.MASTER_SERVICE,
                TxProtocol.GET_REGION,
                new Wire.Writer().i32(p.region()).toBuffer()),
            "tx region placement");
    m.i32("region");
    int primary = m.i32("primary");
    Wire.Reader r =
        new Wire.Reader(
            client.callSync(
                primary,
                TxProtocol.SERVER_SERVICE,
                TxProtocol.OPEN_REGION,
                new Wire.Writer().i32(p.region()).toBuffer()),
            "tx region capability");
    o =
        new Opened(
            primary,
            new RegionRef(primary, r.i32("fabricRegion"), r.i64("readKey"), r.i64("length")));
    r.end();
    regions.put(p.region(), o);
    return o;
  }
}
