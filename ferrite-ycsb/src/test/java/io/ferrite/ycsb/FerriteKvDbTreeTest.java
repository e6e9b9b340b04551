package io.ferrite.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.tree.TreeConfig;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

/**
 * The binding with {@code -p ferrite.face=tree} against a master and a memory server (tcp + shm) in
 * this JVM, meganodes of 64 KiB so that a few hundred records split them: the operations as YCSB
 * calls them, scans in key order, and every core workload a to f through YCSB's {@link
 * CoreWorkload}, by both search paths, with no operation failing.
 */
class FerriteKvDbTreeTest extends ClusterDbTest {
  FerriteKvDbTreeTest() {
    super("ycsbtree");
  }

  @Override
  Map<String, String> config() {
    return Map.of(
        FerriteConfig.CAPACITY_DRAM, "512m",
        TreeConfig.MEGANODE_SIZE, "64k",
        TreeConfig.EXTENT_REGION_SIZE, "4m");
  }

  @BeforeEach
  void binding() {
    props.setProperty("ferrite.face", "tree");
  }

  @Test
  void operationsAsYcsbCallsThemWithScansInKeyOrder() throws Exception {
    for (String path : List.of("server", "client")) {
      props.setProperty("ferrite.tree.path", path);
      props.setProperty("ferrite.table", "usertable-" + path);
      FerriteKvDb a = new FerriteKvDb();
      a.setProperties(props);
      a.init();
      // A failed assertion must not leave the shared client to the next test.
      try {
        assertEquals(Status.OK, a.insert("t", "user1", fields("f0", "a", "f1", "b")));
        Map<String, ByteIterator> got = new HashMap<>();
        assertEquals(Status.OK, a.read("t", "user1", null, got));
        assertEquals("b", text(got, "f1"));
        assertEquals(Status.OK, a.update("t", "user1", fields("f1", "B")));
        got.clear();
        assertEquals(Status.OK, a.read("t", "user1", Set.of("f1"), got));
        assertEquals(Set.of("f1"), got.keySet(), "only the fields asked for");
        assertEquals("B", text(got, "f1"));
        assertEquals(Status.NOT_FOUND, a.update("t", "nobody", fields("f0", "x")));
        assertEquals(Status.OK, a.delete("t", "user1"));
        assertEquals(Status.NOT_FOUND, a.delete("t", "user1"));
        assertEquals(Status.NOT_FOUND, a.read("t", "user1", null, new HashMap<>()));
        // Enough records (about 300 B each) for several 64 KiB meganodes.
        TreeMap<String, String> model = new TreeMap<>();
        for (int i = 0; i < 1500; i++) {
          String k = String.format(Locale.ROOT, "user%05d", (i * 7919) % 1500);
          model.put(k, "v" + k);
          assertEquals(Status.OK, a.insert("t", k, fields("f0", "v" + k, "pad", "x".repeat(300))));
        }
        for (String start : List.of("user00000", "user00700", "user01490", "user0")) {
          Vector<HashMap<String, ByteIterator>> scanned = new Vector<>();
          assertEquals(Status.OK, a.scan("t", start, 100, Set.of("f0"), scanned));
          List<String> want = new ArrayList<>(model.tailMap(start, true).values());
          want = want.subList(0, Math.min(100, want.size()));
          List<String> saw = new ArrayList<>();
          for (HashMap<String, ByteIterator> r : scanned) {
            assertEquals(Set.of("f0"), r.keySet());
            saw.add(text(r, "f0"));
          }
          assertEquals(want, saw, path + " scan from " + start);
        }
      } finally {
        a.cleanup();
      }
    }
  }

  @Test
  void everyCoreWorkloadRunsWithoutAFailedOperation() throws Exception {
    for (String w : List.of("a", "b", "c", "d", "e", "f")) {
      for (String path : List.of("server", "client")) {
        Properties p = new Properties();
        try (InputStream in =
            FerriteKvDbTreeTest.class.getResourceAsStream(
                "/io/ferrite/ycsb/workloads/workload" + w)) {
          p.load(in);
        }
        p.putAll(props);
        p.setProperty("ferrite.tree.path", path);
        p.setProperty("ferrite.table", "workload" + w + "-" + path);
        p.setProperty("recordcount", "300");
        p.setProperty("operationcount", "300");
        assertEquals(List.of(), YcsbProperties.problems(p));
        Measurements.setProperties(p);
        CoreWorkload workload = new CoreWorkload();
        workload.init(p);
        Checked db = new Checked();
        db.setProperties(p);
        db.init();
        Object state = workload.initThread(p, 0, 1);
        for (int i = 0; i < 300; i++) {
          assertTrue(workload.doInsert(db, state));
        }
        for (int i = 0; i < 300; i++) {
          assertTrue(workload.doTransaction(db, state));
        }
        db.cleanup();
        workload.cleanup();
        assertEquals(List.of(), db.failures, "workload " + w + " " + path);
        if (w.equals("e")) {
          assertTrue(db.scanned > 0, "workload e scanned records: " + db.scanned);
        }
      }
    }
  }

  /** The binding, with the first five statuses other than OK written down. */
  static final class Checked extends DB {
    final FerriteKvDb db = new FerriteKvDb();
    final List<String> failures = new ArrayList<>();
    long scanned;

    @Override
    public void init() throws site.ycsb.DBException {
      db.setProperties(getProperties());
      db.init();
    }

    @Override
    public void cleanup() {
      db.cleanup();
    }

    private Status check(String op, String key, Status s) {
      if (!s.isOk() && failures.size() < 5) {
        failures.add(op + " " + key + ": " + s);
      }
      return s;
    }

    @Override
    public Status read(String t, String key, Set<String> f, Map<String, ByteIterator> result) {
      return check("read", key, db.read(t, key, f, result));
    }

    @Override
    public Status scan(
        String t,
        String start,
        int count,
        Set<String> f,
        Vector<HashMap<String, ByteIterator>> result) {
      Status s = check("scan", start, db.scan(t, start, count, f, result));
      scanned += result.size();
      return s;
    }

    @Override
    public Status update(String t, String key, Map<String, ByteIterator> values) {
      return check("update", key, db.update(t, key, values));
    }

    @Override
    public Status insert(String t, String key, Map<String, ByteIterator> values) {
      return check("insert", key, db.insert(t, key, values));
    }

    @Override
    public Status delete(String t, String key) {
      return check("delete", key, db.delete(t, key));
    }
  }
}
