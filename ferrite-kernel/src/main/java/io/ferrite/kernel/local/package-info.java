/**
 * Kernel layer, in-process clusters: {@link io.ferrite.kernel.local.InProcessCluster} starts a
 * master and memory servers in one JVM for {@code ferrite local}, the benchmarks and the in-process
 * sort.
 */
package io.ferrite.kernel.local;
