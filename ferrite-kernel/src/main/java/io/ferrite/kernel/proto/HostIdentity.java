package io.ferrite.kernel.proto;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Names the machine (and its boot, and its network namespace) a process runs on: {@code
 * hostname/boot-id/net:inode}. Two processes with the same identity may reach each other over the
 * shm fabric, so a client picks shm only for a server (or master) whose identity equals its own.
 *
 * <p>The boot id makes a reused hostname in another boot (or another container with its own
 * /dev/shm namespace but the same kernel) count as the same host only when it truly is. The network
 * namespace (the inode of {@code /proc/self/ns/net}) makes processes that share hostname and kernel
 * but not the network count as different hosts: containers with their own network, and the
 * namespaces the multi-host tests make with {@code ip netns} — there shm would work (they share
 * /dev/shm) but would hide whether the cluster works across hosts, which is what a namespace of its
 * own stands for. Where the namespace cannot be read (not Linux), the part is left out.
 *
 * <p>A location hint ({@code Mutation.allocate(..., location)}) may name the host by the whole
 * identity, by {@code hostname/boot-id} or by the hostname alone: the allocator matches a prefix
 * that ends at a {@code /}.
 */
public final class HostIdentity {
  private HostIdentity() {}

  /** This process's host identity. */
  public static String local() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      host = "unknown-host";
    }
    String boot;
    try {
      boot =
          Files.readString(Path.of("/proc/sys/kernel/random/boot_id"), StandardCharsets.US_ASCII)
              .trim();
    } catch (IOException | RuntimeException e) {
      boot = "no-boot-id";
    }
    String net = networkNamespace();
    return host + "/" + boot + (net.isEmpty() ? "" : "/" + net);
  }

  /**
   * {@code net:<inode>} of this process's network namespace ({@code /proc/self/ns/net} reads as
   * {@code net:[4026531833]}), or "" where there is none to read.
   */
  static String networkNamespace() {
    try {
      String link = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
      return link.replace("[", "").replace("]", "");
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }
}
