package io.ferrite.hadoop.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractGetFileStatusTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.ClassRule;

/** Hadoop's {@link AbstractContractGetFileStatusTest} against a Ferrite cluster of its own. */
public class FerriteContractGetFileStatusTest extends AbstractContractGetFileStatusTest {
  @ClassRule public static final FerriteClusterRule CLUSTER = new FerriteClusterRule();

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new FerriteContract(conf, CLUSTER.cluster());
  }
}
