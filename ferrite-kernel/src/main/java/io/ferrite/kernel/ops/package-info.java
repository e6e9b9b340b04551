/**
 * Operating a running process: its {@link io.ferrite.kernel.ops.Metrics} (Micrometer, scraped by
 * Prometheus) and the {@link io.ferrite.kernel.ops.OpsServer} that serves them over HTTP (the JDK's
 * {@code com.sun.net.httpserver}; the master adds its read-only web console there).
 */
package io.ferrite.kernel.ops;
