package io.ferrite.fabric;

/** A listening endpoint of one fabric. */
public interface FabricServer extends AutoCloseable {
  /** The address clients pass to {@link Fabric#connect}, e.g. {@code tcp://127.0.0.1:7001}. */
  String address();

  /** Server-side counts of the ops this endpoint served. */
  Counters counters();

  /** Number of currently open, authenticated connections. */
  int connections();

  /** Stops accepting, closes every connection and stops the RPC threads. Does not close regions. */
  @Override
  void close();
}
