package io.ferrite.apps.worker;

import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.Secrets;
import java.nio.file.Path;

/**
 * How another process reaches the cluster: the master's URI, the cluster id, the secret file (never
 * the secret itself on a command line) and the fabric for one-sided ops.
 *
 * @param uri {@code ferrite://host:port} or a fabric address of the master
 * @param clusterId the cluster id
 * @param secretFile the cluster secret file (mode 0600): the root or a {@code client.secret}
 * @param fabric the client fabric: {@code auto} (shm on this host), {@code shm} or {@code tcp}
 */
public record ClusterAccess(String uri, String clusterId, Path secretFile, String fabric) {
  public FerriteClient connect(String clientName) {
    return Ferrite.connect(
        uri,
        ClientOptions.builder(Secrets.load(clusterId, secretFile))
            .fabric(fabric)
            .clientName(clientName)
            .build());
  }
}
