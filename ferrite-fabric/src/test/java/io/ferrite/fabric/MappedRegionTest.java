package io.ferrite.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MappedRegionTest {
  @TempDir Path dir;

  @Test
  void regionFilesAreReadableByTheirOwnerOnly() throws IOException {
    try (MappedRegion r = MappedRegion.create(dir.resolve("r"), 1, 1 << 20, 5)) {
      assertEquals(
          "rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(r.file())));
      assertEquals(1 << 20, Files.size(r.file()));
    }
  }

  @Test
  void aSecondMappingSeesTheSameMemory() {
    try (MappedRegion a = MappedRegion.create(dir.resolve("r"), 1, 4096, 5);
        MappedRegion b = MappedRegion.open(dir.resolve("r"), 1, 4096, 5)) {
      a.putLongRelease(64, 42);
      assertEquals(42, b.getLongAcquire(64));
      assertEquals(42, b.compareAndSwap(64, 42, 43));
      assertEquals(43, a.fetchAndAdd(64, 1));
      assertEquals(44, b.getLongAcquire(64));
      ByteBuffer src = ByteBuffer.wrap(new byte[] {1, 2, 3});
      b.writeFrom(7, src);
      ByteBuffer dst = ByteBuffer.allocate(3);
      a.readInto(7, dst);
      assertEquals(ByteBuffer.wrap(new byte[] {1, 2, 3}), dst);
    }
  }

  @Test
  void compareAndSwapReturnsThePreviousValueEitherWay() {
    try (MappedRegion r = MappedRegion.create(dir.resolve("r"), 1, 4096, 5)) {
      assertEquals(0, r.compareAndSwap(0, 0, 9));
      assertEquals(9, r.compareAndSwap(0, 0, 10), "failed CAS returns the current value");
      assertEquals(9, r.getLongAcquire(0));
    }
  }

  @Test
  void blockKeysOfAnyBlockSizeGrantExactlyTheirBlock() {
    // 3000 B blocks: not a power of two, so the block of an offset is a division, not a shift.
    MappedRegion r = MappedRegion.create(dir.resolve("r"), 1, 12_000, 5);
    try {
      BlockKeys keys = BlockKeys.create(BlockKeys.fileFor(r.file()), 3000, 4);
      r.attachBlockKeys(keys);
      keys.set(2, 77);
      long ro = Capabilities.readOnly(77);
      assertEquals(ErrorCode.OK, r.check(77, 6000, 3000, Access.WRITE));
      assertEquals(ErrorCode.OK, r.check(77, 8992, 8, Access.ATOMIC));
      assertEquals(ErrorCode.BAD_RKEY, r.check(77, 5992, 16, Access.READ), "straddles 1 and 2");
      assertEquals(ErrorCode.BAD_RKEY, r.check(77, 9000, 8, Access.READ), "block 3");
      assertEquals(ErrorCode.BAD_RKEY, r.check(77, 4096, 8, Access.READ), "block 1");
      assertEquals(ErrorCode.OK, r.check(ro, 6000, 8, Access.READ));
      assertEquals(ErrorCode.PERMISSION_DENIED, r.check(ro, 6000, 8, Access.WRITE));
      assertEquals(ErrorCode.PERMISSION_DENIED, r.check(r.readKey(), 0, 8, Access.ATOMIC));
      assertEquals(ErrorCode.BAD_RKEY, r.check(0, 0, 8, Access.READ), "0 is never a grant");
      assertEquals(MappedRegion.Grant.BLOCK, r.grantOf(ro));
      assertEquals(MappedRegion.Grant.NONE, r.grantOf(78));
      keys.set(2, 0);
      assertEquals(ErrorCode.BAD_RKEY, r.check(77, 6000, 8, Access.READ), "revoked");
      assertEquals(ErrorCode.BAD_RKEY, r.check(ro, 6000, 8, Access.READ), "revoked");
    } finally {
      r.closeAndDelete();
    }
    assertTrue(!Files.exists(BlockKeys.fileFor(dir.resolve("r"))), "the key file goes too");
  }

  @Test
  void checkNamesWhatIsWrong() {
    MappedRegion r = MappedRegion.create(dir.resolve("r"), 1, 4096, 5);
    try {
      assertEquals(ErrorCode.OK, r.check(5, 0, 4096, Access.READ));
      assertEquals(ErrorCode.BAD_RKEY, r.check(6, 0, 8, Access.READ));
      assertEquals(ErrorCode.OUT_OF_BOUNDS, r.check(5, 4089, 8, Access.READ));
      assertEquals(ErrorCode.OUT_OF_BOUNDS, r.check(5, -1, 1, Access.READ));
      assertEquals(ErrorCode.OUT_OF_BOUNDS, r.check(5, Long.MAX_VALUE, 8, Access.READ));
      assertEquals(ErrorCode.OUT_OF_BOUNDS, r.check(5, 0, -1, Access.READ));
      assertEquals(ErrorCode.MISALIGNED, r.check(5, 4, 8, Access.ATOMIC));
      assertTrue(
          r.describe(ErrorCode.OUT_OF_BOUNDS, 4089, 8).contains("offset + length <= 4096"),
          r.describe(ErrorCode.OUT_OF_BOUNDS, 4089, 8));
    } finally {
      r.close();
    }
    assertEquals(ErrorCode.NO_SUCH_REGION, r.check(5, 0, 8, Access.READ));
  }

  @Test
  void badLengthsAndExistingFilesAreRefused() {
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> MappedRegion.create(dir.resolve("a"), 1, 0, 5))
            .code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(
                FerriteException.class,
                () -> MappedRegion.create(dir.resolve("b"), 1, MappedRegion.MAX_LENGTH + 8, 5))
            .code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> MappedRegion.create(dir.resolve("c"), 1, 12, 5))
            .code());
    try (MappedRegion r = MappedRegion.create(dir.resolve("d"), 1, 4096, 5)) {
      assertEquals(
          ErrorCode.CONFLICT,
          assertThrows(
                  FerriteException.class, () -> MappedRegion.create(dir.resolve("d"), 1, 4096, 5))
              .code());
      assertEquals(
          ErrorCode.CONFLICT,
          assertThrows(FerriteException.class, () -> MappedRegion.open(r.file(), 1, 8192, 5))
              .code());
    }
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(
                FerriteException.class, () -> MappedRegion.open(dir.resolve("none"), 1, 4096, 5))
            .code());
  }

  @Test
  void aReleasedRegionRefusesNewOpsKeepsItsBytesForOpsThatHoldItAndDeletesItsFile()
      throws IOException {
    MappedRegion r = MappedRegion.create(dir.resolve("r"), 1, 4096, 5);
    MappedRegion reader = MappedRegion.open(dir.resolve("r"), 1, 4096, 5);
    try {
      r.putLongRelease(8, -1L);
      r.releaseAndDelete();
      assertTrue(r.isReleased());
      assertEquals(ErrorCode.NO_SUCH_REGION, r.check(5, 0, 8, Access.READ));
      assertTrue(!Files.exists(dir.resolve("r")), "the file is deleted");
      // Not unmapped: an op that passed the check before the release still reads the memory.
      assertEquals(-1L, r.getLongAcquire(8));
      // Another mapping of the unlinked file keeps its pages: same bytes, no fault.
      assertEquals(-1L, reader.getLongAcquire(8));
      r.close(); // does nothing after a release: the JVM unmaps it when it is unreachable
      assertEquals(-1L, r.getLongAcquire(8));
    } finally {
      reader.close();
    }
  }
}
