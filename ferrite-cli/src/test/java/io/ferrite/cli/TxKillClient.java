package io.ferrite.cli;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxClient;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A client JVM of {@link TxKillMultiProcessTest}: transfer threads, each with its own connection,
 * printing one line to stdout (flushed) before each commit and one after it, so the test can
 * SIGKILL it in the middle of a commit and still know what it was committing:
 *
 * <pre>
 *  C id thread invokeNanos ops   before txCommit (ops: {@link TxKillBank#encodeOps})
 *  O id OUTCOME completeNanos     after it (COMMITTED, ABORTED, UNKNOWN)
 *  END                            every thread stopped (stdin closed)
 *  FAIL thread message            an unexpected error (the test fails on it)
 * </pre>
 *
 * A C line without its O line is a commit in flight when the JVM died: UNKNOWN. A transaction whose
 * reads failed sent nothing for commit and prints nothing. Times are {@link System#nanoTime()},
 * which on Linux is CLOCK_MONOTONIC, one clock for every process of the machine, as {@code
 * TxHistory} requires of a multi-process history.
 *
 * <p>Arguments: master URI, cluster id, secret file, accounts ({@link TxKillBank#encode}), seed,
 * threads. It stops when its stdin closes (the test, or the test's JVM, went away).
 */
public final class TxKillClient {
  private TxKillClient() {}

  public static void main(String[] args) throws Exception {
    String master = args[0];
    Credentials credentials = new Credentials(args[1], Secrets.read(Path.of(args[2])));
    List<FatPointer> accounts = TxKillBank.decode(args[3]);
    long seed = Long.parseLong(args[4]);
    int threads = Integer.parseInt(args[5]);
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong tags = new AtomicLong(TxKillBank.CHILD_TAGS);
    AtomicInteger ids = new AtomicInteger();
    List<FerriteClient> clients = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      FerriteClient fc =
          Ferrite.connect(
              master,
              ClientOptions.builder(credentials).fabric("tcp").clientName("tx-kill-child").build());
      clients.add(fc);
      TxClient c = new TxClient(fc);
      Random random = new Random(seed + w);
      String name = "tx-kill-child-" + w;
      int thread = w;
      Thread t =
          new Thread(
              () -> {
                try {
                  while (!done.get()) {
                    TxKillBank.Step s;
                    try {
                      s = TxKillBank.transfer(c, random, accounts, tags.getAndIncrement());
                    } catch (FerriteException e) {
                      continue; // a read failed: nothing sent, nothing to record
                    }
                    int id = ids.getAndIncrement();
                    print(
                        "C "
                            + id
                            + " "
                            + thread
                            + " "
                            + s.invoke()
                            + " "
                            + TxKillBank.encodeOps(s.ops()));
                    Outcome o = TxKillBank.commit(s);
                    print("O " + id + " " + o + " " + System.nanoTime());
                  }
                } catch (RuntimeException | Error e) {
                  print("FAIL " + name + " " + e);
                  done.set(true);
                }
              },
              name);
      workers.add(t);
      t.start();
    }
    awaitEof(System.in);
    done.set(true);
    for (Thread t : workers) {
      t.join();
    }
    for (FerriteClient fc : clients) {
      fc.close();
    }
    print("END");
    System.exit(0);
  }

  private static void awaitEof(InputStream in) throws IOException {
    byte[] b = new byte[64];
    while (in.read(b) >= 0) {
      // Nothing is sent; the test closes the stream to stop this client.
    }
  }

  private static void print(String line) {
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }
}
