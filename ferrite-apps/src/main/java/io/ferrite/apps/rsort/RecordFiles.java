package io.ferrite.apps.rsort;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Record files on disk: the input of {@code rsort --input} (one file, or every regular file of a
 * directory in name order, read as one sequence of records) and the output parts.
 */
public final class RecordFiles {
  private RecordFiles() {}

  /** One input file and the records it holds. */
  public record InputFile(Path path, long records) {}

  /**
   * The input files at {@code input}, checked: the path exists, a directory holds at least one
   * file, and every file is a whole number of 100-byte records.
   *
   * @throws FerriteException INVALID_ARGUMENT, saying which file is wrong and how
   */
  public static List<InputFile> list(Path input) {
    if (!Files.exists(input)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "input " + input + ": no such file or directory");
    }
    List<Path> paths = new ArrayList<>();
    if (Files.isDirectory(input)) {
      try (Stream<Path> s = Files.list(input)) {
        s.filter(Files::isRegularFile)
            .filter(p -> !p.getFileName().toString().startsWith("."))
            .sorted()
            .forEach(paths::add);
      } catch (IOException e) {
        throw new UncheckedIOException("listing input directory " + input, e);
      }
      if (paths.isEmpty()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "input directory " + input + " holds no record files");
      }
    } else {
      paths.add(input);
    }
    List<InputFile> out = new ArrayList<>();
    long total = 0;
    for (Path p : paths) {
      long size;
      try {
        size = Files.size(p);
      } catch (IOException e) {
        throw new UncheckedIOException("reading the size of input file " + p, e);
      }
      if (size % Records.RECORD != 0) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            String.format(
                Locale.ROOT,
                "input file %s: %d B is not a multiple of the %d-byte record (%d whole records"
                    + " and %d B of a truncated one)",
                p,
                size,
                Records.RECORD,
                size / Records.RECORD,
                size % Records.RECORD));
      }
      out.add(new InputFile(p, size / Records.RECORD));
      total += size / Records.RECORD;
    }
    if (total == 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "input " + input + " holds no records");
    }
    return out;
  }

  /** Records in all of {@code files}. */
  public static long records(List<InputFile> files) {
    long n = 0;
    for (InputFile f : files) {
      n += f.records();
    }
    return n;
  }

  /**
   * Reads records {@code [first, first + count)} of the files (one sequence, in order) into {@code
   * dst} from byte {@code at}.
   */
  public static void read(List<InputFile> files, long first, int count, ByteBuffer dst, int at)
      throws IOException {
    long skip = first;
    int done = 0;
    for (InputFile f : files) {
      if (done == count) {
        return;
      }
      if (skip >= f.records()) {
        skip -= f.records();
        continue;
      }
      int n = (int) Math.min(count - done, f.records() - skip);
      try (FileChannel ch = FileChannel.open(f.path(), StandardOpenOption.READ)) {
        ByteBuffer into = dst.duplicate();
        into.limit(at + (done + n) * Records.RECORD).position(at + done * Records.RECORD);
        long pos = skip * Records.RECORD;
        while (into.hasRemaining()) {
          int r = ch.read(into, pos);
          if (r < 0) {
            throw new IOException(f.path() + " ended early: did it change since the check?");
          }
          pos += r;
        }
      }
      done += n;
      skip = 0;
    }
    if (done < count) {
      throw new IOException("input files hold fewer than " + (first + count) + " records");
    }
  }

  /** Writes {@code len} bytes of {@code src} from byte {@code at} to {@code file}, replacing it. */
  public static void write(Path file, ByteBuffer src, int at, int len) throws IOException {
    try (FileChannel ch =
        FileChannel.open(
            file,
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE)) {
      ByteBuffer from = src.duplicate();
      from.limit(at + len).position(at);
      while (from.hasRemaining()) {
        ch.write(from);
      }
    }
  }

  /** The output file of key range {@code j}: {@code part-00000} and up, in key order. */
  public static Path part(Path dir, int j) {
    return dir.resolve(String.format(Locale.ROOT, "part-%05d", j));
  }
}
