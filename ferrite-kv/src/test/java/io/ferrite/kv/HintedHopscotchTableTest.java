package io.ferrite.kv;

/**
 * Every hopscotch contract test again, with each get and multiGet reading the extent its hint names
 * beside the neighbourhood ({@link ExtentHints}) on the local fabric, which tears reads in some of
 * the tests: a hint must never change an answer.
 */
class HintedHopscotchTableTest extends HopscotchTableTest {
  @Override
  boolean hinted() {
    return true;
  }
}
