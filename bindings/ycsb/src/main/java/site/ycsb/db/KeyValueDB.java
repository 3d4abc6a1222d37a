// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;

/**
 * The YCSB operations, written once for both bindings over four primitives of an ordered
 * key-value store (get, put, delete, scan), so tierkv and RocksDB see the same keys, the same
 * values (RecordCodec) and the same read-modify-write on update.
 *
 * <ul>
 *   <li>Keys: the YCSB key's UTF-8 bytes; the table name is not part of the key (YCSB's core
 *       workloads use one table).
 *   <li>read: get, then the requested fields (all when fields is null) decoded from the record.
 *   <li>update: get, merge (RecordCodec.merge: the named fields replaced, the others kept), put;
 *       a missing record is NOT_FOUND. The three steps hold a per-key lock (one of 4,096 striped
 *       locks of this JVM), so two concurrent updates of one key never lose each other's fields.
 *   <li>insert: put of the encoded record; delete: delete.
 *   <li>scan: up to recordcount records from the first key &gt;= startkey, in key order.
 * </ul>
 *
 * <p>A failure returns Status "ERROR" with the engine's message as description (the first ten of a
 * JVM are also printed on stderr); nothing is thrown to YCSB, whose client thread would otherwise
 * stop the whole run with exit status 0.
 */
public abstract class KeyValueDB extends DB {
  private static final int LOCK_STRIPES = 4096; // a power of two
  private static final Object[] LOCKS = new Object[LOCK_STRIPES];
  private static final int MAX_PRINTED_ERRORS = 10;
  private static final AtomicInteger ERRORS_PRINTED = new AtomicInteger();

  static {
    for (int i = 0; i < LOCK_STRIPES; i++) {
      LOCKS[i] = new Object();
    }
  }

  /** The engine's name in messages ("tierkv", "rocksdb"). */
  protected abstract String engine();

  /** The value stored under key, or null. */
  protected abstract byte[] get(byte[] key) throws Exception;

  protected abstract void put(byte[] key, byte[] value) throws Exception;

  protected abstract void delete(byte[] key) throws Exception;

  /** Values of the entries from the first key &gt;= start, at most out.length, into out; returns n. */
  protected abstract int scan(byte[] start, byte[][] out) throws Exception;

  static byte[] keyBytes(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  private static Object lockOf(String key) {
    int h = key.hashCode();
    h ^= h >>> 16;
    return LOCKS[h & (LOCK_STRIPES - 1)];
  }

  /** Status ERROR describing e; printed on stderr for the first few of the JVM. */
  protected Status error(String op, String key, Throwable e) {
    String shown = key.length() <= 64 ? key : key.substring(0, 64) + "...(" + key.length() + " chars)";
    String msg = engine() + " " + op + " " + shown + ": "
        + (e.getMessage() != null ? e.getMessage() : e.toString());
    if (ERRORS_PRINTED.getAndIncrement() < MAX_PRINTED_ERRORS) {
      System.err.println(msg);
    }
    return new Status("ERROR", msg);
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] rec = get(keyBytes(key));
      if (rec == null) {
        return Status.NOT_FOUND;
      }
      RecordCodec.decode(rec, fields, result);
      return Status.OK;
    } catch (Exception e) {
      return error("read", key, e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      byte[][] recs = new byte[Math.max(0, recordcount)][];
      int n = scan(keyBytes(startkey), recs);
      for (int i = 0; i < n; i++) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        RecordCodec.decode(recs[i], fields, row);
        result.add(row);
      }
      return Status.OK;
    } catch (Exception e) {
      return error("scan", startkey, e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    byte[] k = keyBytes(key);
    try {
      synchronized (lockOf(key)) {
        byte[] old = get(k);
        if (old == null) {
          return Status.NOT_FOUND;
        }
        put(k, RecordCodec.merge(old, values));
      }
      return Status.OK;
    } catch (Exception e) {
      return error("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      put(keyBytes(key), RecordCodec.encode(values));
      return Status.OK;
    } catch (Exception e) {
      return error("insert", key, e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      delete(keyBytes(key));
      return Status.OK;
    } catch (Exception e) {
      return error("delete", key, e);
    }
  }

  /**
   * A size property: digits with an optional K/M/G/T suffix (powers of 1024, as tierkv's
   * options), or def when the property is not set.
   */
  static long sizeProperty(java.util.Properties p, String name, long def) {
    String v = p.getProperty(name);
    if (v == null) {
      return def;
    }
    String s = v.trim().toUpperCase(Locale.ROOT);
    if (s.endsWith("B")) {
      s = s.substring(0, s.length() - 1);
    }
    int shift = 0;
    if (!s.isEmpty()) {
      switch (s.charAt(s.length() - 1)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: break;
      }
    }
    if (shift != 0) {
      s = s.substring(0, s.length() - 1);
    }
    try {
      long n = Long.parseLong(s);
      if (n < 0 || n > (Long.MAX_VALUE >> shift)) {
        throw new NumberFormatException();
      }
      return n << shift;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + "=" + v + ": not a size (such as 4096, 64K, 64M, 1G)");
    }
  }
}
