/**
 * Kernel layer, memory server: region files per storage class, one region table served on every
 * fabric, registration and heartbeats, and the {@link io.ferrite.kernel.server.FerriteService} SPI
 * through which faces host their server halves.
 */
package io.ferrite.kernel.server;
