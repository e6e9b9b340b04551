package io.ferrite.hadoop.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.ClassRule;

/** Hadoop's {@link AbstractContractMkdirTest} against a Ferrite cluster of its own. */
public class FerriteContractMkdirTest extends AbstractContractMkdirTest {
  @ClassRule public static final FerriteClusterRule CLUSTER = new FerriteClusterRule();

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new FerriteContract(conf, CLUSTER.cluster());
  }
}
