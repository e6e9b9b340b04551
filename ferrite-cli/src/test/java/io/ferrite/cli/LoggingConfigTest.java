package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Properties;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The user's JUL configuration wins over Ferrite's one-line format; --log-level sets the level. */
class LoggingConfigTest extends CliCapture {
  private final Logger root = Logger.getLogger("");

  @AfterEach
  void restoreJdkLogging() throws Exception {
    LogManager.getLogManager().readConfiguration();
  }

  @Test
  void aUserConfigurationFileOrClassIsLeftAlone() {
    for (String key :
        new String[] {"java.util.logging.config.file", "java.util.logging.config.class"}) {
      root.setLevel(Level.FINEST);
      Properties system = new Properties();
      system.setProperty(key, "user-choice");
      assertFalse(FerriteCli.configureLogging(system), key);
      assertEquals(Level.FINEST, root.getLevel(), key + ": the user's level stays");
    }
  }

  @Test
  void withoutOneFerritesFormatIsInstalledAtInfo() {
    root.setLevel(Level.FINEST);
    assertTrue(FerriteCli.configureLogging(new Properties()));
    assertEquals(Level.INFO, root.getLevel());
    assertEquals(
        "%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n",
        LogManager.getLogManager().getProperty("java.util.logging.SimpleFormatter.format"));
  }

  @Test
  void logLevelIsGlobalAndSetsRootAndHandlers() {
    FerriteCli.configureLogging(new Properties());
    assertEquals(0, run("status", "--log-level", "fine", "--help"), err.toString());
    assertEquals(Level.FINE, root.getLevel());
    assertTrue(root.getHandlers().length > 0);
    for (var h : root.getHandlers()) {
      assertEquals(Level.FINE, h.getLevel(), h.toString());
    }
    assertEquals(0, run("--log-level", "WARNING", "--help"), err.toString());
    assertEquals(Level.WARNING, root.getLevel());
  }

  @Test
  void aBadLevelIsRefusedWithTheChoices() {
    assertEquals(2, run("status", "--log-level", "LOUD", "--help"));
    assertTrue(err.toString().contains("expected: SEVERE"), err.toString());
  }
}
