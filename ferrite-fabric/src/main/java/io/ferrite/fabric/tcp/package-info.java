/** The tcp fabric: frames over TCP to any host (see {@link io.ferrite.fabric.tcp.TcpFabric}). */
package io.ferrite.fabric.tcp;
