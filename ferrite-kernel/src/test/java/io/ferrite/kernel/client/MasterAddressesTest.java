package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.util.List;
import org.junit.jupiter.api.Test;

class MasterAddressesTest {
  @Test
  void oneMasterUriMapsToItsTcpAddressWithTheDefaultPort() {
    assertEquals(List.of("tcp://h:7100"), Ferrite.masterAddresses("ferrite://h"));
    assertEquals(List.of("tcp://h:7101"), Ferrite.masterAddresses("ferrite://h:7101/"));
    assertEquals("tcp://h:7101", Ferrite.masterAddress("ferrite://h:7101"));
  }

  @Test
  void aGroupUriNamesEveryMasterInOrder() {
    assertEquals(
        List.of("tcp://a:7100", "tcp://b:7200", "tcp://c:7100"),
        Ferrite.masterAddresses("ferrite://a,b:7200, c"));
    assertEquals(
        List.of("tcp://a:1", "local://node-0-2"),
        Ferrite.masterAddresses("tcp://a:1,local://node-0-2"));
  }

  @Test
  void malformedUrisAreRefusedWithTheExpectedShape() {
    for (String bad :
        List.of("ferrite://a,,b", "ferrite://", "http://a:1", "tcp://a:1,", "ferrite://a/x")) {
      FerriteException e = assertThrows(FerriteException.class, () -> Ferrite.masterAddresses(bad));
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), bad);
    }
  }

  @Test
  void aUriWithSemicolonsNamesSeveralGroupsInOrder() {
    assertEquals(
        List.of(List.of("tcp://a:7100", "tcp://b:7101"), List.of("tcp://c:7200")),
        Ferrite.groups("ferrite://a,b:7101;c:7200"));
    assertEquals(
        List.of(List.of("local://node-0-1"), List.of("local://node-0-2")),
        Ferrite.groups("local://node-0-1;local://node-0-2"));
    assertEquals(List.of(List.of("tcp://h:7100")), Ferrite.groups("ferrite://h"));
    assertEquals(
        "tcp://a:7100,tcp://b:7101;tcp://c:7200",
        Ferrite.clusterAddress("ferrite://a,b:7101;c:7200"));
    // Everything that takes one group reads the first one.
    assertEquals(
        List.of("tcp://a:7100", "tcp://b:7101"), Ferrite.masterAddresses("ferrite://a,b:7101;c"));
    for (String bad :
        List.of("ferrite://a;", "ferrite://;a", "ferrite://a;;b", "tcp://a:1;http://b")) {
      FerriteException e = assertThrows(FerriteException.class, () -> Ferrite.groups(bad));
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), bad);
    }
  }
}
