package io.ferrite.kernel.master;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The answers of the recent calls that changed the metadata, by session and request sequence
 * number: what a retry of the same request id gets instead of running again. Rebuilt by the journal
 * like the rest of the metadata ({@link MasterEvent.RequestApplied}, {@link
 * MasterEvent.RequestAnswered}); changed only by {@link Metadata#apply} under the metadata lock,
 * read without it (the master's I/O threads look a retry up before anything else: a concurrent map
 * of concurrent maps, so a read never waits behind a journal write).
 *
 * <p>Bounded: a session keeps the ids its client may still retry — those at or above the {@code
 * ackedBelow} its latest request carried — and at most {@link #PER_SESSION} of them and {@link
 * #SESSION_BYTES} of answers (the oldest go first); an answer larger than {@link #MAX_ANSWER} bytes
 * is not kept (its retry is told the call was applied but its answer is gone). A session's answers
 * go with the session.
 */
final class RememberedAnswers {
  /**
   * The most answers one session keeps (a client with more calls than this in flight loses the
   * oldest).
   */
  static final int PER_SESSION = 1024;

  /** The largest answer kept, in bytes (an ALLOCATE of ~20,000 blocks). */
  static final int MAX_ANSWER = 1 << 20;

  /** The most answer bytes one session keeps (beyond them, the oldest answers go first). */
  static final long SESSION_BYTES = 8L << 20;

  /** Status of a call applied whose answer is not known (a crash between the two records). */
  static final int UNKNOWN = -1;

  /**
   * One remembered call: {@code status} 0 and the answer, an error's wire code and message, or
   * UNKNOWN.
   */
  record Answer(int status, byte[] body) {}

  /** One session's answers and their bytes (the bytes changed only under the metadata lock). */
  private static final class Session {
    final ConcurrentNavigableMap<Long, Answer> answers = new ConcurrentSkipListMap<>();
    long bytes;

    void trim() {
      while (answers.size() > PER_SESSION || (bytes > SESSION_BYTES && answers.size() > 1)) {
        bytes -= answers.pollFirstEntry().getValue().body().length;
      }
    }
  }

  private final Map<Long, Session> bySession = new ConcurrentHashMap<>();

  /** The remembered answer of {@code seq} of {@code sessionId}, or null. Any thread. */
  Answer get(long sessionId, long seq) {
    Session s = bySession.get(sessionId);
    return s == null ? null : s.answers.get(seq);
  }

  /** A call applied: forget the session's ids below {@code ackedBelow}, remember this one. */
  void applied(long sessionId, long seq, long ackedBelow) {
    Session s = bySession.computeIfAbsent(sessionId, k -> new Session());
    var below = s.answers.headMap(ackedBelow);
    for (Answer a : below.values()) {
      s.bytes -= a.body().length;
    }
    below.clear();
    s.answers.putIfAbsent(seq, new Answer(UNKNOWN, new byte[0]));
    s.trim();
  }

  /** The answer of an applied call (ignored if the call is no longer remembered). */
  void answered(long sessionId, long seq, int status, byte[] body) {
    Session s = bySession.get(sessionId);
    if (s != null) {
      Answer old = s.answers.get(seq);
      if (old != null) {
        s.answers.put(seq, new Answer(status, body));
        s.bytes += body.length - old.body().length;
        s.trim();
      }
    }
  }

  /** The session ended: its answers go. */
  void sessionClosed(long sessionId) {
    bySession.remove(sessionId);
  }

  /** How many answers are kept in all (tests, status). */
  int size() {
    int n = 0;
    for (Session s : bySession.values()) {
      n += s.answers.size();
    }
    return n;
  }

  /** The events that recreate what is remembered (a snapshot's), session by session. */
  void snapshotInto(List<MasterEvent> out) {
    bySession.forEach(
        (session, s) ->
            s.answers.forEach(
                (seq, a) -> {
                  out.add(new MasterEvent.RequestApplied(session, seq, 0));
                  if (a.status() != UNKNOWN) {
                    out.add(new MasterEvent.RequestAnswered(session, seq, a.status(), a.body()));
                  }
                }));
  }
}
