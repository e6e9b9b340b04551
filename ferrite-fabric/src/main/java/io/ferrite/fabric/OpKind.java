package io.ferrite.fabric;

/** The kinds of operation an endpoint counts. */
public enum OpKind {
  READ,
  WRITE,
  COMPARE_AND_SWAP,
  FETCH_AND_ADD,
  RPC
}
