package io.ferrite.apps.carafe;

/** The helper threads an importer or generator splits its work over. */
final class Helpers {
  private Helpers() {}

  /**
   * Waits until every thread of {@code helpers} has ended, even when interrupted (their parts of
   * the work must be complete, or known failed, before the caller reads them); an interrupt is kept
   * for the caller.
   */
  static void joinAll(Thread[] helpers) {
    boolean interrupted = false;
    for (Thread t : helpers) {
      while (true) {
        try {
          t.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
