package io.ferrite.kernel.master;

import io.ferrite.kernel.proto.BlockKeyMint;
import java.nio.charset.StandardCharsets;

/** A block key mint for master state tests. */
final class BlockKeyMintFixture {
  private BlockKeyMintFixture() {}

  static void install(MasterState state) {
    state.blockKeys(
        new BlockKeyMint("0123456789abcdef-test-root".getBytes(StandardCharsets.UTF_8)));
  }
}
