package io.ferrite.hadoop.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractCopyFromLocalTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.ClassRule;

/** Hadoop's {@link AbstractContractCopyFromLocalTest} against a Ferrite cluster of its own. */
public class FerriteContractCopyFromLocalTest extends AbstractContractCopyFromLocalTest {
  @ClassRule public static final FerriteClusterRule CLUSTER = new FerriteClusterRule();

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new FerriteContract(conf, CLUSTER.cluster());
  }
}
