package io.ferrite.ycsb;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * What Ferrite's YCSB runs understand: YCSB's own client, core-workload and measurement properties
 * (those of YCSB 0.17.0's {@code Client}, {@code CoreWorkload} and {@code Measurements}) and this
 * binding's {@code ferrite.*} keys. YCSB itself ignores a property it does not know, so a typo
 * ({@code readproprtion=0.9}) silently runs the default mix; {@link #check} refuses it instead, and
 * refuses a workload other than {@code CoreWorkload} or a db other than {@link FerriteKvDb}.
 */
public final class YcsbProperties {
  /** The workload class the binding is tested with. */
  public static final String CORE_WORKLOAD = "site.ycsb.workloads.CoreWorkload";

  /** The binding's own keys (see {@link FerriteKvDb}). */
  public static final Set<String> BINDING =
      Set.of(
          "ferrite.cluster",
          "ferrite.cluster.file",
          "ferrite.cluster.id",
          "ferrite.secret.file",
          "ferrite.fabric",
          "ferrite.table",
          "ferrite.layout",
          "ferrite.inline",
          "ferrite.shards",
          "ferrite.slots",
          "ferrite.replicas",
          "ferrite.metrics.port",
          "ferrite.face",
          "ferrite.tree.path");

  /** YCSB 0.17.0's keys: Client, CoreWorkload, Measurements and the measurement types. */
  public static final Set<String> YCSB =
      Set.of(
          // site.ycsb.Client
          "operationcount",
          "recordcount",
          "workload",
          "db",
          "exporter",
          "exportfile",
          "threadcount",
          "insertcount",
          "insertstart",
          "target",
          "maxexecutiontime",
          "dotransactions",
          "status",
          "status.interval",
          "label",
          // site.ycsb.workloads.CoreWorkload
          "table",
          "fieldcount",
          "fieldlengthdistribution",
          "fieldlength",
          "minfieldlength",
          "fieldlengthhistogram",
          "readallfields",
          "writeallfields",
          "dataintegrity",
          "readproportion",
          "updateproportion",
          "insertproportion",
          "scanproportion",
          "readmodifywriteproportion",
          "requestdistribution",
          "zeropadding",
          "minscanlength",
          "maxscanlength",
          "scanlengthdistribution",
          "insertorder",
          "hotspotdatafraction",
          "hotspotopnfraction",
          "core_workload_insertion_retry_limit",
          "core_workload_insertion_retry_interval",
          "fieldnameprefix",
          // site.ycsb.measurements.*
          "measurementtype",
          "measurement.interval",
          "measurement.trackjvm",
          "measurement.histogram.verbose",
          "hdrhistogram.percentiles",
          "hdrhistogram.fileoutput",
          "hdrhistogram.output.path",
          "histogram.buckets",
          "timeseries.granularity",
          "measurement.raw.output_file",
          "measurement.raw.no_summary");

  private YcsbProperties() {}

  /** What is wrong with {@code p} for a Ferrite run, one sentence per problem; empty if nothing. */
  public static List<String> problems(Properties p) {
    List<String> problems = new ArrayList<>();
    for (String key : new TreeSet<>(p.stringPropertyNames())) {
      if (!YCSB.contains(key) && !BINDING.contains(key)) {
        problems.add(
            "unknown property '"
                + key
                + "': neither YCSB's (client, core workload, measurements) nor the binding's"
                + " (ferrite.*: "
                + String.join(", ", new TreeSet<>(BINDING))
                + ")");
      }
    }
    String workload = p.getProperty("workload", CORE_WORKLOAD).trim();
    if (!workload.equals(CORE_WORKLOAD)) {
      problems.add("workload=" + workload + ": Ferrite's ycsb runs " + CORE_WORKLOAD + " only");
    }
    String db = p.getProperty("db", FerriteKvDb.class.getName()).trim();
    if (!db.equals(FerriteKvDb.class.getName())) {
      problems.add("db=" + db + ": Ferrite's ycsb runs " + FerriteKvDb.class.getName() + " only");
    }
    String face = p.getProperty("ferrite.face", "kv").trim();
    if (!face.equals("kv") && !face.equals("tree")) {
      problems.add("ferrite.face=" + face + ": expected kv or tree");
    }
    String path = p.getProperty("ferrite.tree.path", "auto").trim();
    if (!path.equals("auto") && !path.equals("server") && !path.equals("client")) {
      problems.add("ferrite.tree.path=" + path + ": expected auto, server or client");
    }
    for (String key : List.of("recordcount", "operationcount", "threadcount", "target")) {
      String v = p.getProperty(key);
      if (v != null && !v.trim().matches("[0-9]+")) {
        problems.add(key + "=" + v + ": expected a whole number >= 0");
      }
    }
    return problems;
  }

  /** A note for the user about {@code p} that is not an error (scans), or null. */
  public static String note(Properties p) {
    String scans = p.getProperty("scanproportion", "0").trim();
    if (p.getProperty("ferrite.face", "kv").trim().equals("tree")) {
      return null; // the tree face serves scans
    }
    try {
      if (Double.parseDouble(scans) > 0) {
        return String.format(
            Locale.ROOT,
            "scanproportion=%s: scans answer NOT_IMPLEMENTED on the kv face (counted as failed"
                + " operations; -p ferrite.face=tree serves them)",
            scans);
      }
    } catch (NumberFormatException e) {
      return "scanproportion=" + scans + ": not a number";
    }
    return null;
  }
}
