package io.ferrite.fabric.testing;

/**
 * The seed {@link SeedExtension} gave the current test; inject it as a parameter to seed something
 * other than a {@link java.util.Random} (a fault schedule, another test's generator).
 */
public record TestSeed(long value) {
  /** The option that replays the test with this seed. */
  public String reproduceOption() {
    return "-D" + SeedExtension.PROPERTY + "=" + value;
  }
}
