package io.ferrite.hadoop.contract;

import io.ferrite.hadoop.TestCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.junit.rules.ExternalResource;

/**
 * One {@link TestCluster} per contract test class (a JUnit 4 {@code @ClassRule}: Hadoop's contract
 * tests are JUnit 4): started before the class's first test, stopped after its last, also when a
 * test fails. The contract tests go over the {@code auto} fabric: shm to both servers, the master
 * over tcp.
 */
public final class FerriteClusterRule extends ExternalResource {
  private TestCluster cluster;

  @Override
  protected void before() throws Throwable {
    cluster = TestCluster.start("auto");
  }

  @Override
  protected void after() {
    try {
      if (cluster != null) {
        cluster.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("stopping the test cluster", e);
    } finally {
      cluster = null;
    }
  }

  public TestCluster cluster() {
    if (cluster == null) {
      throw new IllegalStateException("the cluster runs only while the test class runs");
    }
    return cluster;
  }
}
