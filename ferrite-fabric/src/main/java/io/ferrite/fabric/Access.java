package io.ferrite.fabric;

/** What a one-sided op does to a region's memory: the right its key must grant. */
public enum Access {
  /** READ: any key for the bytes, read-only ones included. */
  READ,
  /** WRITE: a read-write key. */
  WRITE,
  /** CAS or FAA on one aligned word: a read-write key. */
  ATOMIC
}
