package io.ferrite.fabric;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

class CredentialsTest {
  private final byte[] root = "0123456789abcdef-root-secret".getBytes(StandardCharsets.UTF_8);
  private final Credentials admin = new Credentials("c", root);

  @Test
  void roleSecretsAreTheDocumentedHmacsOfTheRoot() throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(root, "HmacSHA256"));
    byte[] server = mac.doFinal("ferrite-role-server".getBytes(StandardCharsets.US_ASCII));
    byte[] client = mac.doFinal("ferrite-role-client".getBytes(StandardCharsets.US_ASCII));
    assertArrayEquals(server, admin.secretFor(Role.SERVER));
    assertArrayEquals(client, admin.secretFor(Role.CLIENT));
    assertArrayEquals(root, admin.secretFor(Role.ADMIN));
    assertEquals(Role.CLIENT, admin.as(Role.CLIENT).role());
    assertArrayEquals(client, admin.as(Role.CLIENT).secret());
  }

  @Test
  void aDerivedSecretDerivesNothing() {
    Credentials client = admin.as(Role.CLIENT);
    assertTrue(client.canDerive(Role.CLIENT));
    assertFalse(client.canDerive(Role.SERVER));
    assertFalse(client.canDerive(Role.ADMIN));
    FerriteException e = assertThrows(FerriteException.class, () -> client.as(Role.SERVER));
    assertEquals(ErrorCode.AUTH_FAILED, e.code());
    assertThrows(FerriteException.class, () -> client.secretFor(Role.ADMIN));
    assertThrows(FerriteException.class, () -> admin.as(Role.SERVER).as(Role.CLIENT));
  }

  @Test
  void equalityIsClusterRoleAndSecretNotOrigin() {
    assertEquals(admin, admin.withOrigin("/x/secret"));
    assertNotEquals(admin, new Credentials("c", root, Role.CLIENT, ""));
    assertNotEquals(admin, admin.as(Role.SERVER));
  }

  @Test
  void atLeast() {
    assertTrue(Role.ADMIN.atLeast(Role.SERVER));
    assertTrue(Role.SERVER.atLeast(Role.SERVER));
    assertFalse(Role.CLIENT.atLeast(Role.SERVER));
    assertFalse(Role.SERVER.atLeast(Role.ADMIN));
    assertTrue(Role.CLIENT.atLeast(Role.CLIENT));
    for (Role r : Role.values()) {
      assertEquals(r, Role.fromWire(r.wire()));
    }
  }
}
