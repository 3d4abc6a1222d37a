// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.After;
import org.junit.Test;
import site.ycsb.ByteIterator;
import site.ycsb.DBException;
import site.ycsb.Status;

public class TierkvClientTest {
  private final List<TierkvClient> open = new ArrayList<>();

  static Properties props(String dir, String... kv) {
    Properties p = new Properties();
    if (dir != null) {
      p.setProperty("tierkv.dir", dir);
    }
    for (int i = 0; i < kv.length; i += 2) {
      p.setProperty(kv[i], kv[i + 1]);
    }
    return p;
  }

  TierkvClient client(Properties p) throws DBException {
    TierkvClient c = new TierkvClient();
    c.setProperties(p);
    c.init();
    open.add(c);
    return c;
  }

  @After
  public void closeAll() throws Exception {
    for (TierkvClient c : open) {
      c.cleanup();
    }
    assertEquals(0, TierkvClient.references());
    TestDirs.removeAll();
  }

  static String key(int i) {
    return String.format("user%06d", i);
  }

  static Map<String, ByteIterator> record(int i) {
    return RecordCodecTest.fields("field0", "a" + i, "field1", "b" + i, "field2", "c" + i);
  }

  static Map<String, String> read(KeyValueDB db, String key) {
    Map<String, ByteIterator> m = new HashMap<>();
    assertEquals(Status.OK, db.read("usertable", key, null, m));
    return RecordCodecTest.strings(m);
  }

  @Test
  public void crud() throws Exception {
    TierkvClient db = client(props(TestDirs.fresh("crud")));
    for (int i = 0; i < 200; i++) {
      assertEquals(Status.OK, db.insert("usertable", key(i), record(i)));
    }
    assertEquals(Map.of("field0", "a7", "field1", "b7", "field2", "c7"), read(db, key(7)));

    Map<String, ByteIterator> some = new HashMap<>();
    assertEquals(Status.OK, db.read("usertable", key(7), new HashSet<>(Arrays.asList("field1")), some));
    assertEquals(Map.of("field1", "b7"), RecordCodecTest.strings(some));

    assertEquals(Status.OK, db.update("usertable", key(7), RecordCodecTest.fields("field1", "new", "field9", "z")));
    assertEquals(Map.of("field0", "a7", "field1", "new", "field2", "c7", "field9", "z"), read(db, key(7)));

    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    assertEquals(Status.OK, db.scan("usertable", key(195), 10, new HashSet<>(Arrays.asList("field0")), rows));
    assertEquals(5, rows.size()); // 195..199
    for (int i = 0; i < 5; i++) {
      assertEquals(Map.of("field0", "a" + (195 + i)), RecordCodecTest.strings(rows.get(i)));
    }
    rows.clear();
    assertEquals(Status.OK, db.scan("usertable", "user", 3, null, rows));
    assertEquals("a0", RecordCodecTest.strings(rows.get(0)).get("field0"));
    assertEquals(3, rows.size());

    assertEquals(Status.OK, db.delete("usertable", key(7)));
    assertEquals(Status.NOT_FOUND, db.read("usertable", key(7), null, new HashMap<>()));
    assertEquals(Status.NOT_FOUND, db.update("usertable", key(7), record(7)));
    assertNotNull(db.property("tkv.stats"));
  }

  @Test
  public void rejectedOptionsFailInitWithTierkvsReason() throws Exception {
    String dir = TestDirs.fresh("rejected");
    DBException e = assertThrows(DBException.class, () -> client(props(dir, "tierkv.no_such_option", "1")));
    assertTrue(e.getMessage(), e.getMessage().contains("no_such_option=1 rejected"));
    assertTrue(e.getMessage(), e.getMessage().contains("unknown option"));
    e = assertThrows(DBException.class, () -> client(props(dir, "tierkv.memtables", "1")));
    assertTrue(e.getMessage(), e.getMessage().contains("memtables=1 rejected"));
    assertTrue(e.getMessage(), e.getMessage().contains("out of range"));
    e = assertThrows(DBException.class, () -> client(props(null)));
    assertTrue(e.getMessage(), e.getMessage().contains("tierkv.dir is not set"));
    assertEquals(0, TierkvClient.references());
    // a valid option is applied
    TierkvClient db = client(props(dir, "tierkv.block_cache_size", "8M"));
    assertTrue(db.property("tkv.options").contains("block_cache_size=8388608"));
  }

  @Test
  public void oneSharedHandleReferenceCounted() throws Exception {
    String dir = TestDirs.fresh("shared");
    TierkvClient a = client(props(dir));
    TierkvClient b = client(props(dir));
    assertEquals(2, TierkvClient.references());
    assertThrows(DBException.class, () -> client(props(dir + "-other")));
    assertEquals(Status.OK, a.insert("usertable", key(1), record(1)));
    a.cleanup();
    a.cleanup(); // idempotent
    assertEquals(1, TierkvClient.references());
    assertEquals("b1", read(b, key(1)).get("field1")); // b still has the handle
    Status closed = a.read("usertable", key(1), null, new HashMap<>());
    assertEquals("ERROR", closed.getName());
    assertTrue(closed.getDescription(), closed.getDescription().contains("after cleanup"));
    b.cleanup();
    assertEquals(0, TierkvClient.references());
    TierkvClient c = client(props(dir)); // reopened: the data is there
    assertEquals("c1", read(c, key(1)).get("field2"));
  }

  @Test
  public void tierkvErrorsBecomeErrorStatusWithTheMessage() throws Exception {
    TierkvClient db = client(props(TestDirs.fresh("errors")));
    Status s = db.insert("usertable", new String(new char[70000]).replace('\0', 'k'), record(1));
    assertEquals("ERROR", s.getName());
    assertTrue(s.getDescription(), s.getDescription().contains("tkv_put: invalid argument"));
    s = db.read("usertable", "", null, new HashMap<>());
    assertEquals("ERROR", s.getName());
    assertTrue(s.getDescription(), s.getDescription().contains("tkv_get: invalid argument"));
  }

  @Test
  public void nativeMisuseThrowsInsteadOfCrashing() throws Exception {
    String dir = TestDirs.fresh("misuse");
    long h = Tierkv.open(dir, new String[0], new String[0]);
    try {
      byte[] k = {'k'};
      assertThrows(NullPointerException.class, () -> Tierkv.get(h, null));
      assertThrows(NullPointerException.class, () -> Tierkv.put(h, k, null));
      assertThrows(NullPointerException.class, () -> Tierkv.scan(h, k, null, null));
      assertThrows(IllegalArgumentException.class, () -> Tierkv.scan(h, k, new byte[1][], new byte[2][]));
      assertThrows(IllegalArgumentException.class, () -> Tierkv.open(dir + "x", new String[] {"a"}, new String[0]));
      assertThrows(IllegalStateException.class, () -> Tierkv.get(0, k));
      TierkvException busy = assertThrows(TierkvException.class, () -> Tierkv.open(dir, null, null));
      assertEquals(-5, busy.status()); // TKV_BUSY: the directory is locked by h
      Tierkv.put(h, k, new byte[5000]); // a value over the glue's on-stack copy
      assertEquals(5000, Tierkv.get(h, k).length);
      byte[][] keys = new byte[4][];
      byte[][] vals = new byte[4][];
      assertEquals(1, Tierkv.scan(h, new byte[] {'a'}, keys, vals));
      assertEquals("k", new String(keys[0], java.nio.charset.StandardCharsets.UTF_8));
      assertEquals(null, Tierkv.property(h, "no.such.property"));
    } finally {
      Tierkv.close(h);
    }
  }

  @Test
  public void concurrentUpdatesOfOneKeyKeepEveryField() throws Exception {
    TierkvClient db = client(props(TestDirs.fresh("concurrent")));
    final int threads = 4;
    final int keys = 20;
    final int rounds = 100;
    for (int k = 0; k < keys; k++) {
      assertEquals(Status.OK, db.insert("usertable", key(k), new HashMap<>()));
    }
    AtomicReference<Status> failed = new AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int id = t;
      ts.add(new Thread(() -> {
        for (int r = 0; r < rounds; r++) {
          for (int k = 0; k < keys; k++) {
            Status s = db.update("usertable", key(k), RecordCodecTest.fields("f" + id, "t" + id + "r" + r));
            if (!s.isOk()) {
              failed.set(s);
            }
          }
        }
      }));
    }
    ts.forEach(Thread::start);
    for (Thread t : ts) {
      t.join();
    }
    assertSame(null, failed.get());
    for (int k = 0; k < keys; k++) {
      Map<String, String> m = read(db, key(k));
      assertEquals(threads, m.size());
      for (int t = 0; t < threads; t++) {
        assertEquals("t" + t + "r" + (rounds - 1), m.get("f" + t));
      }
    }
  }
}
