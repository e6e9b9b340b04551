package io.ferrite.kv;

/**
 * Every Pilaf contract test again with extent hints on (the default: {@link ExtentHints}), each get
 * and multiGet of a key seen before reading its hinted extent alone, on the local fabric, which
 * tears reads in some of the tests: a hint must never change an answer.
 */
class HintedPilafTableTest extends PilafTableTest {
  @Override
  boolean hinted() {
    return true;
  }
}
