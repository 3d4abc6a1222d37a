// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.Test;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.StringByteIterator;

public class RecordCodecTest {
  static Map<String, ByteIterator> fields(String... kv) {
    Map<String, ByteIterator> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], new ByteArrayByteIterator(kv[i + 1].getBytes(StandardCharsets.UTF_8)));
    }
    return m;
  }

  /** The fields as strings (consumes the ByteIterators: call once per map). */
  static Map<String, String> strings(Map<String, ByteIterator> m) {
    Map<String, String> out = new HashMap<>();
    for (Map.Entry<String, ByteIterator> e : m.entrySet()) {
      out.put(e.getKey(), new String(e.getValue().toArray(), StandardCharsets.UTF_8));
    }
    return out;
  }

  static Map<String, String> decodeAll(byte[] rec) {
    Map<String, ByteIterator> m = new HashMap<>();
    RecordCodec.decode(rec, null, m);
    return strings(m);
  }

  @Test
  public void roundTripKeepsEveryField() {
    char[] big = new char[300]; // a 2-byte length
    Arrays.fill(big, 'x');
    byte[] rec = RecordCodec.encode(fields("field0", "v0", "empty", "", "na\u00efve", "\u00e9t\u00e9", "big",
        new String(big)));
    Map<String, String> m = decodeAll(rec);
    assertEquals(4, m.size());
    assertEquals("v0", m.get("field0"));
    assertEquals("", m.get("empty"));
    assertEquals("\u00e9t\u00e9", m.get("na\u00efve"));
    assertEquals(new String(big), m.get("big"));
  }

  @Test
  public void defaultRecordIs1080Bytes() {
    Map<String, ByteIterator> m = new LinkedHashMap<>();
    for (int i = 0; i < 10; i++) {
      m.put("field" + i, new StringByteIterator(new String(new char[100]).replace('\0', 'a')));
    }
    assertEquals(1080, RecordCodec.encode(m).length);
  }

  @Test
  public void decodeSelectsFields() {
    byte[] rec = RecordCodec.encode(fields("a", "1", "b", "2", "c", "3"));
    Map<String, ByteIterator> m = new HashMap<>();
    RecordCodec.decode(rec, new HashSet<>(Arrays.asList("b", "zzz")), m);
    assertEquals(Map.of("b", "2"), strings(m));
  }

  @Test
  public void mergeReplacesNamedFieldsAndKeepsTheRest() {
    byte[] old = RecordCodec.encode(fields("a", "1", "b", "2", "c", "3"));
    byte[] merged = RecordCodec.merge(old, fields("b", "two", "d", "4"));
    assertEquals(Map.of("a", "1", "b", "two", "c", "3", "d", "4"), decodeAll(merged));
    assertEquals(old.length + 2 + 4, merged.length); // "b" grew by 2 bytes, "d" added 4
    assertArrayEquals(new byte[0], RecordCodec.merge(new byte[0], new HashMap<>()));
  }

  @Test
  public void malformedRecordsThrow() {
    byte[] rec = RecordCodec.encode(fields("name", "value"));
    byte[] truncated = Arrays.copyOf(rec, rec.length - 1);
    assertThrows(IllegalArgumentException.class, () -> decodeAll(truncated));
    byte[] noValueLength = Arrays.copyOf(rec, 5);
    assertThrows(IllegalArgumentException.class, () -> decodeAll(noValueLength));
    byte[] hugeLength = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 'a'};
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> decodeAll(hugeLength));
    assertTrue(e.getMessage(), e.getMessage().contains("runs past"));
    byte[] overlong = {(byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x01};
    assertThrows(IllegalArgumentException.class, () -> decodeAll(overlong));
    assertThrows(IllegalArgumentException.class, () -> RecordCodec.merge(truncated, fields("a", "b")));
  }
}
