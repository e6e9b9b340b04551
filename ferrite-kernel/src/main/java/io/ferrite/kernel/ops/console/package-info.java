/**
 * The master's read-only web console on its {@link io.ferrite.kernel.ops.OpsServer}: the page and
 * its JSON ({@link io.ferrite.kernel.ops.console.Console}), and the live rates the memory servers'
 * heartbeats feed ({@link io.ferrite.kernel.ops.console.LoadBoard}). See docs/OPERATIONS.md.
 */
package io.ferrite.kernel.ops.console;
