/**
 * Kernel layer, configuration: one immutable {@link io.ferrite.kernel.config.FerriteConfig} per
 * process (defaults, file, environment, flags), the cluster secret and cluster files, fabric
 * factories and named threads.
 */
package io.ferrite.kernel.config;
