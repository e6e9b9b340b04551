package io.ferrite.kernel.proto;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Names the machine (and its boot) a process runs on: {@code hostname/boot-id}. Two processes with
 * the same identity share {@code /dev/shm}, so a client may reach a server over the shm fabric. The
 * boot id makes a reused hostname in another boot (or another container with its own /dev/shm
 * namespace but the same kernel) count as the same host only when it truly is.
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
    return host + "/" + boot;
  }
}
