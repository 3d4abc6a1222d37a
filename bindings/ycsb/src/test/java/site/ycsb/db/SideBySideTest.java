// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Vector;
import org.junit.Test;
import site.ycsb.ByteIterator;
import site.ycsb.Status;

/**
 * Both bindings in one JVM: rocksdbjni's native library and the tierkv glue loaded side by side,
 * each doing real writes and reads, with the same answers; the JVM's malloc stays libc's.
 */
public class SideBySideTest {
  static String maps() throws Exception {
    return new String(Files.readAllBytes(Paths.get("/proc/self/maps")));
  }

  static void assertLibcMalloc(String when) {
    String[] owners = Tierkv.mallocOwners();
    assertTrue(when + ": the process's malloc is " + owners[0], owners[0].contains("libc.so"));
    assertTrue(when + ": tierkv's malloc is " + owners[1], owners[1].contains("libc.so"));
  }

  static Map<String, ByteIterator> record(int i) {
    Map<String, ByteIterator> m = new HashMap<>();
    for (int f = 0; f < 10; f++) {
      m.put("field" + f, new site.ycsb.StringByteIterator("v" + i + "." + f + "-" + "x".repeat(i % 200)));
    }
    return m;
  }

  @Test
  public void bothBindingsInOneJvm() throws Exception {
    Properties p = new Properties();
    p.setProperty("tierkv.dir", TestDirs.fresh("side-tierkv"));
    p.setProperty("rocksdb.dir", TestDirs.fresh("side-rocksdb"));
    p.setProperty("rocksdb.block_cache_size", "8M");
    TierkvClient t = new TierkvClient();
    t.setProperties(p);
    t.init();
    assertLibcMalloc("after loading the tierkv glue");
    RocksDBClient r = new RocksDBClient();
    r.setProperties(p);
    r.init();
    try {
      String m = maps();
      assertTrue("tierkv glue mapped", m.contains(Tierkv.libraryPath()));
      assertTrue("rocksdbjni mapped", m.contains("librocksdbjni"));
      assertLibcMalloc("after loading rocksdbjni");

      KeyValueDB[] dbs = {t, r};
      for (KeyValueDB db : dbs) {
        for (int i = 0; i < 2000; i++) {
          assertEquals(Status.OK, db.insert("usertable", "user" + (i * 7919 % 2000), record(i * 7919 % 2000)));
        }
        for (int i = 0; i < 2000; i += 3) {
          assertEquals(Status.OK, db.update("usertable", "user" + i, RecordCodecTest.fields("field3", "u" + i)));
        }
        for (int i = 0; i < 2000; i += 5) {
          assertEquals(Status.OK, db.delete("usertable", "user" + i));
        }
      }
      for (int i = 0; i < 2000; i++) {
        Map<String, ByteIterator> a = new HashMap<>();
        Map<String, ByteIterator> b = new HashMap<>();
        Status sa = t.read("usertable", "user" + i, null, a);
        Status sb = r.read("usertable", "user" + i, null, b);
        assertEquals(sa, sb);
        assertEquals(i % 5 == 0 ? Status.NOT_FOUND : Status.OK, sa);
        Map<String, String> ra = RecordCodecTest.strings(a);
        assertEquals(ra, RecordCodecTest.strings(b));
        if (sa == Status.OK) {
          assertEquals(10, ra.size());
          assertEquals(i % 3 == 0 ? "u" + i : "v" + i + ".3-" + "x".repeat(i % 200), ra.get("field3"));
        }
      }
      for (String start : new String[] {"user", "user1", "user1999", "user5", "zzz"}) {
        Vector<HashMap<String, ByteIterator>> a = new Vector<>();
        Vector<HashMap<String, ByteIterator>> b = new Vector<>();
        assertEquals(Status.OK, t.scan("usertable", start, 100, null, a));
        assertEquals(Status.OK, r.scan("usertable", start, 100, null, b));
        assertEquals(a.size(), b.size());
        for (int i = 0; i < a.size(); i++) {
          assertEquals(RecordCodecTest.strings(a.get(i)), RecordCodecTest.strings(b.get(i)));
        }
      }
    } finally {
      r.cleanup();
      t.cleanup();
      TestDirs.removeAll();
    }
  }
}
