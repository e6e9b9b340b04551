package io.ferrite.cli;

import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.WorkerProcesses;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The options every hidden worker command takes first, as {@link WorkerProcesses#accessArgs} writes
 * them: how to reach the cluster and the coordinator's pid.
 */
final class WorkerAccessOptions {
  @Option(names = "--cluster", required = true)
  String uri;

  @Option(names = "--cluster-id", required = true)
  String clusterId;

  @Option(names = "--secret-file", required = true)
  Path secretFile;

  @Option(names = "--fabric", defaultValue = "auto")
  String fabric;

  @Option(names = "--parent-pid", defaultValue = "0")
  long parentPid;

  ClusterAccess access() {
    return new ClusterAccess(uri, clusterId, secretFile, fabric);
  }
}
