package io.ferrite.clientruntime;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The program a child JVM runs with Spark (3.5.9 or 4.0.4, with its own Netty and Hadoop client)
 * and the shaded jar on its class path: Spark in {@code local[2]} reads a {@code ferrite://} text
 * file with {@code sc.textFile}, the way a Spark user would, with the file system's keys as {@code
 * spark.hadoop.*}.
 *
 * <p>Arguments: {@code file secretFile clusterId fabric}. Prints {@code spark version=V lines=N
 * sum=S} (Spark's version, the number of lines, the sum of the numbers on them), then {@code spark
 * ok}.
 */
public final class SparkProbe {
  private SparkProbe() {}

  public static void main(String[] args) {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("ferrite-client-runtime-probe")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.hadoop.fs.ferrite.secret.file", args[1])
            .set("spark.hadoop.fs.ferrite.cluster.id", args[2])
            .set("spark.hadoop.fs.ferrite.cluster.file", args[1] + ".no-cluster-file")
            .set("spark.hadoop.fs.ferrite.fabric", args[3]);
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      // Two partitions at least: both local threads read a part of the file.
      JavaRDD<String> lines = sc.textFile(args[0], 2);
      long count = lines.count();
      long sum = lines.map(Long::parseLong).reduce(Long::sum);
      System.out.println("spark version=" + sc.version() + " lines=" + count + " sum=" + sum);
    }
    System.out.println("spark ok");
  }
}
