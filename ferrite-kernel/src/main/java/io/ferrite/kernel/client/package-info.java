/**
 * Kernel layer, client core: {@link io.ferrite.kernel.client.Ferrite#connect} opens a {@link
 * io.ferrite.kernel.client.FerriteClient} with a leased session, shared per-server connections over
 * the fabric chosen per server, block allocation and one-sided operations on blocks.
 */
package io.ferrite.kernel.client;
