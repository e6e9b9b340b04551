/**
 * Spark on Ferrite (issue #16): {@link io.ferrite.spark.FerriteShuffleManager}, a Spark 3.5 {@code
 * ShuffleManager} whose map outputs are Files in the nodes face (docs/SPARK.md).
 */
package io.ferrite.spark;
