package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The master process on a corrupt journal: it refuses to start, naming the file and the offset;
 * {@link Master#repairJournal} (what {@code ferrite master --repair-journal} runs) cuts there and
 * says so, and the master then starts with what preceded the bad record.
 */
class MasterJournalRepairTest {
  @TempDir Path dir;

  @Test
  void aCorruptJournalStopsTheMasterUntilARepairIsAskedFor() throws Exception {
    Path log;
    try (LocalCluster cluster = new LocalCluster(dir)) {
      cluster.startMaster();
      cluster.startServer("s1");
      cluster.awaitServers(1);
      FerriteClient c = cluster.client();
      for (int i = 0; i < 8; i++) {
        c.allocate(1, "dram", true, "owner-" + i);
      }
      cluster.master.close();
      try (var s = Files.list(dir.resolve("master").resolve("journal"))) {
        log =
            s.filter(p -> p.getFileName().toString().startsWith("log-")).findFirst().orElseThrow();
      }
      // Flip a byte in the body of a record with records after it.
      byte[] all = Files.readAllBytes(log);
      ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
      int at = Journal.HEADER;
      for (int i = 0; i < 3; i++) {
        at += Journal.RECORD_HEADER + b.getInt(at);
      }
      int len = b.getInt(at);
      assertTrue(at + Journal.RECORD_HEADER + len < all.length, "records follow");
      all[at + Journal.RECORD_HEADER + len / 2] ^= 0x40;
      Files.write(log, all);

      JournalCorruptException e = assertThrows(JournalCorruptException.class, cluster::startMaster);
      assertTrue(e.getMessage().contains(log + " is corrupt at offset " + at), e.getMessage());
      assertTrue(e.getMessage().contains("--repair-journal"), e.getMessage());

      List<String> cut = Master.repairJournal(cluster.config);
      assertEquals(1, cut.size(), cut.toString());
      assertTrue(cut.get(0).contains("truncated at offset " + at), cut.get(0));
      Master m = cluster.startMaster();
      assertEquals(3, m.journal().recovery().logRecords(), "the records before the bad one");
    }
  }
}
