package io.ferrite.tx;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;

/** The {@link TxFunction}s {@link TxShipTest} ships (installed through META-INF/services). */
final class ShipFunctions {
  private ShipFunctions() {}

  /** Adds the 8-byte argument to the counter at the address; returns the new value. */
  public static final class Add implements TxFunction {
    @Override
    public String name() {
      return "test.add";
    }

    @Override
    public byte[] apply(LocalTx tx, FatPointer address, byte[] argument) {
      long v = TxCommitTest.num(tx.read(address)) + TxCommitTest.num(argument);
      tx.write(address, TxCommitTest.num(v));
      return TxCommitTest.num(v);
    }
  }

  /**
   * Reads the object named by the argument (a fat pointer) and adds it into the counter at the
   * address: touches a second object, which may live elsewhere.
   */
  public static final class AddFrom implements TxFunction {
    @Override
    public String name() {
      return "test.add-from";
    }

    @Override
    public byte[] apply(LocalTx tx, FatPointer address, byte[] argument) {
      FatPointer other =
          FatPointer.readFrom(new Wire.Reader(java.nio.ByteBuffer.wrap(argument), "arg"));
      long v = TxCommitTest.num(tx.read(address)) + TxCommitTest.num(tx.read(other));
      tx.write(address, TxCommitTest.num(v));
      return TxCommitTest.num(v);
    }
  }

  /** Writes the counter, allocates an object, then throws: nothing may stay. */
  public static final class WriteThenThrow implements TxFunction {
    @Override
    public String name() {
      return "test.throws";
    }

    @Override
    public byte[] apply(LocalTx tx, FatPointer address, byte[] argument) {
      tx.write(address, TxCommitTest.num(-1));
      tx.alloc(8);
      throw new FerriteException(ErrorCode.CONFLICT, "test.throws refuses, as asked");
    }
  }

  /**
   * Allocates an 8-byte object beside the address holding the argument and stores its fat pointer
   * in the address (a one-element list head); returns the new pointer.
   */
  public static final class Push implements TxFunction {
    @Override
    public String name() {
      return "test.push";
    }

    @Override
    public byte[] apply(LocalTx tx, FatPointer address, byte[] argument) {
      FatPointer node = tx.alloc(8);
      tx.write(node, argument);
      Wire.Writer w = new Wire.Writer();
      FatPointer.writeTo(w, node);
      byte[] ptr = w.toArray();
      tx.write(address, ptr);
      return ptr;
    }
  }
}
