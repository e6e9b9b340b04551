package io.ferrite.kernel.server;

import io.ferrite.fabric.BlockKeys;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionTable;
import io.ferrite.kernel.proto.BlockKeyMint;
import io.ferrite.kernel.proto.ServerProtocol;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The memory server's side of block capabilities: installs in each block-pool region's {@link
 * BlockKeys} table the key of every block's current generation, minted as the master mints it
 * ({@link BlockKeyMint}). Until REGISTER's answer told it the generations, a region's table is all
 * zeros and block keys are refused ({@code BAD_RKEY}): a restarted server never honours a key the
 * master has revoked. REVOKE ({@link ServerProtocol}) moves a block to a later generation.
 * Synchronized: installs are rare (a registration, a free); the fabrics read the tables lock-free.
 */
final class BlockGrants {
  private static final System.Logger LOG = System.getLogger(BlockGrants.class.getName());

  private final BlockKeyMint mint;
  private final RegionTable table;

  /** Installed generations by region id. */
  private final Map<Integer, int[]> generations = new HashMap<>();

  BlockGrants(byte[] rootSecret, RegionTable table) {
    this.mint = new BlockKeyMint(rootSecret);
    this.table = table;
  }

  /** REGISTER's answer: every generation of every block-pool region the master knows. */
  synchronized void install(int serverId, Map<Integer, int[]> gens) {
    int blocks = 0;
    for (Map.Entry<Integer, int[]> e : gens.entrySet()) {
      MappedRegion r = table.get(e.getKey());
      BlockKeys keys = r == null ? null : r.blockKeys();
      if (keys == null || keys.blocks() != e.getValue().length) {
        LOG.log(
            System.Logger.Level.WARNING,
            "master sent {0} generation(s) for region {1}, which has {2}: its block keys stay off",
            e.getValue().length,
            e.getKey(),
            keys == null ? "no block key table" : keys.blocks() + " blocks");
        continue;
      }
      int[] have = generations.computeIfAbsent(e.getKey(), k -> new int[keys.blocks()]);
      for (int i = 0; i < have.length; i++) {
        have[i] = e.getValue()[i];
        keys.set(i, mint.key(serverId, r.id(), r.rkey(), i, have[i]));
      }
      blocks += have.length;
    }
    LOG.log(System.Logger.Level.DEBUG, "installed the keys of {0} block(s)", blocks);
  }

  /**
   * REVOKE: installs each block's key for its new generation (a lower generation than the one
   * installed is a late retry and changes nothing). An unknown region is skipped: it is gone.
   */
  synchronized void revoke(int serverId, List<ServerProtocol.Revoke> revokes) {
    for (ServerProtocol.Revoke rv : revokes) {
      MappedRegion r = table.get(rv.regionId());
      BlockKeys keys = r == null ? null : r.blockKeys();
      int[] have = generations.get(rv.regionId());
      if (keys == null || have == null || rv.blockIndex() < 0 || rv.blockIndex() >= have.length) {
        continue;
      }
      int i = rv.blockIndex();
      if (rv.generation() > have[i]) {
        have[i] = rv.generation();
        keys.set(i, mint.key(serverId, r.id(), r.rkey(), i, have[i]));
      }
    }
  }
}
