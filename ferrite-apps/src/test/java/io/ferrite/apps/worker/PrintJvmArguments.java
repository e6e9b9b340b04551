package io.ferrite.apps.worker;

import java.lang.management.ManagementFactory;

/**
 * A child JVM's main for {@link JvmLauncherTest}: prints each of its JVM arguments on a line, then
 * "done".
 */
public final class PrintJvmArguments {
  private PrintJvmArguments() {}

  public static void main(String[] args) {
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      System.out.println("arg " + a);
    }
    System.out.println("done");
  }
}
