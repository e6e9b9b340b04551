package io.ferrite.kv;

/**
 * Every Pilaf contract test again, with each get and multiGet reading the extent its hint names
 * beside the hinted entry ({@link ExtentHints}) on the local fabric, which tears reads in some of
 * the tests: a hint must never change an answer.
 */
class HintedPilafTableTest extends PilafTableTest {
  @Override
  boolean hinted() {
    return true;
  }
}
