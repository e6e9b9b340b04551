/**
 * Integration layer: Hadoop's {@link org.apache.hadoop.fs.FileSystem} for {@code
 * ferrite://host:port/path} over the nodes face ({@link io.ferrite.hadoop.FerriteFileSystem}),
 * found by Hadoop through {@code META-INF/services}. Hadoop itself is a {@code provided}
 * dependency: the application brings its own.
 */
package io.ferrite.hadoop;
