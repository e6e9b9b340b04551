package io.ferrite.hadoop.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.ClassRule;

/**
 * Hadoop's {@link AbstractContractVectoredReadTest} (once per buffer type) against a Ferrite
 * cluster of its own: Hadoop's default vectored read over the stream's positioned reads.
 */
public class FerriteContractVectoredReadTest extends AbstractContractVectoredReadTest {
  @ClassRule public static final FerriteClusterRule CLUSTER = new FerriteClusterRule();

  public FerriteContractVectoredReadTest(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new FerriteContract(conf, CLUSTER.cluster());
  }
}
