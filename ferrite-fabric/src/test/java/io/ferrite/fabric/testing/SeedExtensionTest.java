package io.ferrite.fabric.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
class SeedExtensionTest {
  private Random fromBeforeEach;

  @BeforeEach
  void before(Random random) {
    fromBeforeEach = random;
  }

  @Test
  void randomIsMadeFromTheSeed(Random random, TestSeed seed) {
    assertSame(fromBeforeEach, random, "one Random per test");
    Random replay = new Random(seed.value());
    for (int i = 0; i < 16; i++) {
      assertEquals(replay.nextLong(), random.nextLong());
    }
  }

  @Test
  void seedsParse() {
    assertEquals(42, SeedExtension.parse("42"));
    assertEquals(-7, SeedExtension.parse("-7"));
    assertEquals(0xFFFF_FFFF_FFFF_FFFFL, SeedExtension.parse("0xffffffffffffffff"));
    assertThrows(IllegalArgumentException.class, () -> SeedExtension.parse("zebra"));
    assertEquals("-Dtests.seed=12", new TestSeed(12).reproduceOption());
  }

  @Test
  void aFailurePublishesTheSeedItRanWith() {
    Map<String, ExtensionSelfTest.Outcome> outcomes = ExtensionSelfTest.run(Deliberate.class);
    ExtensionSelfTest.Outcome failed = outcomes.get("failsWithItsSeed");
    assertTrue(failed.failed(), failed.result().toString());
    assertEquals(
        Long.toString(Deliberate.SEEN.get()),
        failed.entries().get(SeedExtension.PROPERTY),
        "the published seed is the one the test drew from");

    ExtensionSelfTest.Outcome passed = outcomes.get("passes");
    assertFalse(passed.failed());
    assertFalse(passed.entries().containsKey(SeedExtension.PROPERTY), "no noise on success");
  }

  /** Run only by the test above, through a nested launcher. */
  @ExtendWith(ExtensionSelfTest.OnlyWhenLaunched.class)
  @ExtendWith(SeedExtension.class)
  static class Deliberate {
    static final AtomicLong SEEN = new AtomicLong();

    @Test
    void failsWithItsSeed(TestSeed seed) {
      SEEN.set(seed.value());
      fail("deliberate failure");
    }

    @Test
    void passes(Random random) {
      assertTrue(random.nextInt(10) < 10);
    }
  }
}
