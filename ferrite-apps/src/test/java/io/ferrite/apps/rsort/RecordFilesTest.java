package io.ferrite.apps.rsort;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Input files: checked up front with clear errors, read as one sequence across files. */
class RecordFilesTest {
  @TempDir Path dir;

  @Test
  void recordsAreReadAcrossFilesInNameOrder() throws Exception {
    int n = 1000;
    ByteBuffer all = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordGenerator.generate(5, 0, n, all, 0);
    RecordFiles.write(dir.resolve("b"), all, 300 * Records.RECORD, 700 * Records.RECORD);
    RecordFiles.write(dir.resolve("a"), all, 0, 300 * Records.RECORD);
    Files.writeString(dir.resolve(".hidden"), "ignored");
    List<RecordFiles.InputFile> files = RecordFiles.list(dir);
    assertEquals(2, files.size());
    assertEquals(n, RecordFiles.records(files));
    ByteBuffer got = ByteBuffer.allocateDirect(500 * Records.RECORD);
    RecordFiles.read(files, 250, 500, got, 0);
    assertEquals(all.slice(250 * Records.RECORD, 500 * Records.RECORD), got);
  }

  @Test
  void aTruncatedRecordIsAClearError() throws Exception {
    Files.write(dir.resolve("part"), new byte[3 * Records.RECORD + 42]);
    FerriteException e = assertThrows(FerriteException.class, () -> RecordFiles.list(dir));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(
        e.getMessage().contains("342 B is not a multiple of the 100-byte record"), e.getMessage());
    assertTrue(e.getMessage().contains("42 B of a truncated one"), e.getMessage());
  }

  @Test
  void missingAndEmptyInputsAreClearErrors() throws Exception {
    FerriteException e =
        assertThrows(FerriteException.class, () -> RecordFiles.list(dir.resolve("nope")));
    assertTrue(e.getMessage().contains("no such file or directory"), e.getMessage());
    Path empty = Files.createDirectory(dir.resolve("empty"));
    e = assertThrows(FerriteException.class, () -> RecordFiles.list(empty));
    assertTrue(e.getMessage().contains("holds no record files"), e.getMessage());
    Files.write(empty.resolve("zero"), new byte[0]);
    e = assertThrows(FerriteException.class, () -> RecordFiles.list(empty));
    assertTrue(e.getMessage().contains("holds no records"), e.getMessage());
  }
}
