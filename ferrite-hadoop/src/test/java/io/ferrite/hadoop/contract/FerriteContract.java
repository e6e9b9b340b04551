package io.ferrite.hadoop.contract;

import io.ferrite.hadoop.FerriteFileSystem;
import io.ferrite.hadoop.TestCluster;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/**
 * The contract of {@link FerriteFileSystem} for Hadoop's contract tests: what it claims is in
 * {@code contract/ferrite.xml} (see docs/NODES.md, "Hadoop"); the file system is the one {@code
 * FileSystem.get} finds for the class's cluster.
 */
public final class FerriteContract extends AbstractFSContract {
  public static final String CONTRACT_XML = "contract/ferrite.xml";

  private final TestCluster cluster;

  public FerriteContract(Configuration conf, TestCluster cluster) {
    super(conf);
    addConfResource(CONTRACT_XML);
    this.cluster = cluster;
    cluster.configure(getConf());
  }

  @Override
  public FileSystem getTestFileSystem() throws IOException {
    return FileSystem.get(cluster.uri, getConf());
  }

  @Override
  public String getScheme() {
    return FerriteFileSystem.SCHEME;
  }

  @Override
  public Path getTestPath() {
    return new Path("/test");
  }
}
