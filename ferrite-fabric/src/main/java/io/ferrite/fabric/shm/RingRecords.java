package io.ferrite.fabric.shm;

/**
 * The records of the shm RPC rings ({@link RingFile}). Each is an Agrona ring record (length i32 |
 * type i32, 8-byte aligned) whose body is little-endian:
 *
 * <pre>
 * REQUEST (type 1), client -> server
 *  0               8           10         12                 16
 *  +---------------+-----------+----------+------------------+-------------------
 *  | requestId u64 | service   | opcode   | deadlineMillis   | request ...
 *  |               | u16       | u16      | u32              |
 *  +---------------+-----------+----------+------------------+-------------------
 *
 * RESPONSE (type 2), server -> client: one or more chunks per request, in order
 *  0               8          10         12          16          20         24
 *  +---------------+----------+----------+-----------+-----------+----------+-----------
 *  | requestId u64 | status   | pad u16  | total u32 | offset u32| pad u32  | chunk ...
 *  |               | u16      |          |           |           |          |
 *  +---------------+----------+----------+-----------+-----------+----------+-----------
 * </pre>
 *
 * A response longer than the ring's largest record (an eighth of its capacity) travels as chunks of
 * the same request id at increasing offsets, {@code total} being the whole body's length; an error
 * response (status != 0) is one chunk whose body is the UTF-8 message. A request that does not fit
 * one record is sent on the socket instead. Request ids are the ring's own, unrelated to the
 * socket's.
 */
final class RingRecords {
  private RingRecords() {}

  static final int REQUEST = 1;
  static final int RESPONSE = 2;

  static final int REQUEST_HEADER = 16;
  static final int RESPONSE_HEADER = 24;

  static final int REQ_ID = 0;
  static final int REQ_SERVICE = 8;
  static final int REQ_OPCODE = 10;
  static final int REQ_DEADLINE = 12;

  static final int RSP_ID = 0;
  static final int RSP_STATUS = 8;
  static final int RSP_TOTAL = 12;
  static final int RSP_OFFSET = 16;

  /** Error messages are cut to this many UTF-8 bytes, as on the socket. */
  static final int MAX_ERROR_MESSAGE = 1024;
}
