package io.ferrite.fabric.netty;

/**
 * Pending ops ordered by deadline, as an intrusive doubly linked list: insertion walks back from
 * the tail, which is O(1) when deadlines arrive in order (every one-sided op of a connection has
 * the same timeout, so its list is a FIFO), and removal of a completed op is O(1). One timer per
 * connection watches the heads, instead of one scheduled task per op. Event-loop confined.
 */
final class TimeoutList {
  private ClientOp head;
  private ClientOp tail;

  ClientOp head() {
    return head;
  }

  void add(ClientOp op) {
    op.list = this;
    ClientOp after = tail;
    while (after != null && after.deadlineNanos - op.deadlineNanos > 0) {
      after = after.prev;
    }
    op.prev = after;
    if (after == null) {
      op.next = head;
      head = op;
    } else {
      op.next = after.next;
      after.next = op;
    }
    if (op.next == null) {
      tail = op;
    } else {
      op.next.prev = op;
    }
  }

  static void remove(ClientOp op) {
    TimeoutList l = op.list;
    if (l == null) {
      return;
    }
    if (op.prev == null) {
      l.head = op.next;
    } else {
      op.prev.next = op.next;
    }
    if (op.next == null) {
      l.tail = op.prev;
    } else {
      op.next.prev = op.prev;
    }
    op.prev = null;
    op.next = null;
    op.list = null;
  }
}
