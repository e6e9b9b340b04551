package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FerriteSparkConfTest {
  @TempDir Path dir;

  private SparkConf conf() throws Exception {
    Path secret = dir.resolve("secret");
    Files.writeString(
        secret,
        HexFormat.of()
            .formatHex("0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII)));
    return new SparkConf(false)
        .set(FerriteSparkConf.CLUSTER_FILE, dir.resolve("none").toString())
        .set(FerriteSparkConf.SECRET_FILE, secret.toString());
  }

  @Test
  void keysAndDefaults() throws Exception {
    FerriteSparkConf c =
        FerriteSparkConf.from(
            conf()
                .set(FerriteSparkConf.CLUSTER, "ferrite://h:7100")
                .set(FerriteSparkConf.CLUSTER_ID, "c1")
                .set(FerriteSparkConf.STORAGE_CLASS, "dram")
                .set(FerriteSparkConf.PREFETCH, "7"),
            Map.of());
    assertEquals("ferrite://h:7100", c.master());
    assertEquals("c1", c.options().credentials().clusterId());
    assertEquals("dram", c.storageClass());
    assertEquals(7, c.prefetch());
    assertTrue(c.deleteOnUnregister());
    assertEquals("/spark/app-1", c.appDir("app-1"));
    FerriteSparkConf d = FerriteSparkConf.from(conf(), Map.of("FERRITE_CLUSTER", "ferrite://e:1"));
    assertEquals("ferrite://e:1", d.master(), "the environment when the key is unset");
    assertEquals(FerriteSparkConf.DEFAULT_PREFETCH, d.prefetch());
    assertEquals("", d.storageClass());
  }

  @Test
  void badValuesNameTheirKey() throws Exception {
    IllegalArgumentException none =
        assertThrows(IllegalArgumentException.class, () -> FerriteSparkConf.from(conf(), Map.of()));
    assertTrue(none.getMessage().contains(FerriteSparkConf.CLUSTER), none.getMessage());
    IllegalArgumentException prefetch =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                FerriteSparkConf.from(
                    conf()
                        .set(FerriteSparkConf.CLUSTER, "ferrite://h:1")
                        .set(FerriteSparkConf.PREFETCH, "0"),
                    Map.of()));
    assertTrue(prefetch.getMessage().contains(FerriteSparkConf.PREFETCH), prefetch.getMessage());
    Path missing = dir.resolve("no-trust.pem");
    IllegalArgumentException trust =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                FerriteSparkConf.from(
                    conf()
                        .set(FerriteSparkConf.CLUSTER, "ferrite://h:1")
                        .set(FerriteSparkConf.TLS_TRUST, missing.toString()),
                    Map.of()));
    assertTrue(
        trust.getMessage().contains("trust file " + missing + " is not readable"),
        trust.getMessage());
  }
}
