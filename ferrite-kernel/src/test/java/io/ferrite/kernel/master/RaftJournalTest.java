package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RaftJournal} against a stand-in for Raft that holds every submitted entry until the test
 * answers it: which records go in which entry, how many entries await Raft at once, the committed
 * prefix, and what a failed entry does.
 */
class RaftJournalTest {
  private static final long STINT = 77;

  /** One submitted entry: its records {@code from..to}, and the answer Raft will give. */
  private record Submitted(
      RaftClientRequest request,
      long stint,
      long from,
      long to,
      CompletableFuture<RaftClientReply> reply) {
    void commit() {
      reply.complete(RaftClientReply.newBuilder().setRequest(request).setSuccess().build());
    }
  }

  private final LinkedBlockingQueue<Submitted> submitted = new LinkedBlockingQueue<>();

  /** The stand-in returns from the second submission only once this is counted down. */
  private final CountDownLatch secondReturns = new CountDownLatch(1);

  private int submissions;
  private final AtomicReference<FerriteException> failed = new AtomicReference<>();
  private RaftJournal journal;

  private RaftJournal journal() {
    journal =
        new RaftJournal(
            req -> {
              ByteBuffer e =
                  req.getMessage()
                      .getContent()
                      .asReadOnlyByteBuffer()
                      .order(ByteOrder.LITTLE_ENDIAN);
              CompletableFuture<RaftClientReply> reply = new CompletableFuture<>();
              submitted.add(new Submitted(req, e.getLong(0), e.getLong(8), e.getLong(16), reply));
              if (++submissions == 2) { // only the submitter thread calls this
                try {
                  secondReturns.await();
                } catch (InterruptedException x) {
                  Thread.currentThread().interrupt();
                }
              }
              return reply;
            },
            MasterGroup.groupId("raft-journal-test"),
            MasterGroup.peerId(1),
            STINT,
            () -> "master 1 is not serving as the leader of the master group",
            failed::set);
    return journal;
  }

  @AfterEach
  void close() {
    if (journal != null) {
      journal.close();
    }
  }

  /** The next entry the journal submitted (the submitter is a thread of its own). */
  private Submitted next() throws InterruptedException {
    Submitted s = submitted.poll(30, TimeUnit.SECONDS);
    assertNotNull(s, "the journal submitted no entry");
    assertEquals(STINT, s.stint());
    return s;
  }

  private static List<MasterEvent> record(long session) {
    return List.of(new MasterEvent.SessionClosed(session));
  }

  @Test
  void recordsQueuedDuringASubmissionGoInTheNextEntryAndTheCommittedPrefixIsInOrder()
      throws Exception {
    RaftJournal j = journal();
    j.append(record(1));
    Submitted first = next();
    assertEquals(1, first.from());
    assertEquals(1, first.to());
    j.append(record(2));
    Submitted second = next();
    assertEquals(2, second.from());
    assertEquals(2, second.to());
    // The submitter is still inside the second submission: these three are all queued when it
    // comes back for more, so they go in one entry.
    j.append(record(3));
    j.append(record(4));
    j.append(record(5));
    assertEquals(5, j.writtenLsn());
    CompletableFuture<Void> fifth = j.whenDurable(5);
    secondReturns.countDown();
    Submitted third = next();
    assertEquals(3, third.from());
    assertEquals(5, third.to(), "the records queued during a submission, together");

    // Raft answers out of order: the committed prefix waits for the entries before.
    third.commit();
    assertEquals(0, j.durableLsn());
    first.commit();
    assertEquals(1, j.durableLsn());
    assertFalse(fifth.isDone());
    second.commit();
    fifth.join();
    assertEquals(5, j.durableLsn());
    GroupCommit.Stats st = j.stats();
    assertEquals(3, st.fsyncs(), st.toString()); // entries submitted
    assertEquals(3, st.largestBatch(), st.toString());
    assertTrue(submitted.isEmpty());
  }

  @Test
  void anEntryRaftDidNotCommitFailsWhatWaitsAndEveryLaterMutation() throws Exception {
    secondReturns.countDown();
    RaftJournal j = journal();
    j.append(record(1));
    Submitted first = next();
    j.append(record(2));
    Submitted second = next();
    CompletableFuture<Void> one = j.whenDurable(1);
    CompletableFuture<Void> two = j.whenDurable(2);
    second.commit(); // ahead of the first: not yet durable
    first.reply().completeExceptionally(new IOException("lost the leadership"));

    CompletionException e = assertThrows(CompletionException.class, one::join);
    FerriteException f = (FerriteException) e.getCause();
    assertEquals(ErrorCode.NOT_LEADER, f.code());
    assertThrows(CompletionException.class, two::join);
    assertSame(f, failed.get());
    assertSame(f, j.failure());
    assertEquals(0, j.durableLsn());
    FerriteException later = assertThrows(FerriteException.class, () -> j.append(record(3)));
    assertEquals(ErrorCode.NOT_LEADER, later.code());
  }
}
