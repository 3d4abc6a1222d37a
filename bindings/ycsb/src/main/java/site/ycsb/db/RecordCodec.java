// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;

/**
 * The record encoding of both bindings: a YCSB record (field name to bytes) as one value.
 *
 * <pre>
 *   record = field*                 (no header: the value's length ends it)
 *   field  = varint(name length) name(UTF-8) varint(value length) value
 *   varint = unsigned LEB128, 1-5 bytes (7 bits a byte, low bits first)
 * </pre>
 *
 * <p>YCSB's default record, 10 fields "field0".."field9" of 100 bytes, takes 10 x (1 + 6 + 1 +
 * 100) = 1,080 bytes. Field order is not significant; a name appears at most once. Decoding
 * checks every length against the value's end and throws IllegalArgumentException on a
 * malformed record (it never reads past the array).
 */
public final class RecordCodec {
  private RecordCodec() {
  }

  /** The encoding of values (each ByteIterator is consumed). */
  public static byte[] encode(Map<String, ByteIterator> values) {
    int n = values.size();
    byte[][] names = new byte[n][];
    byte[][] vals = new byte[n][];
    int size = 0;
    int i = 0;
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      names[i] = e.getKey().getBytes(StandardCharsets.UTF_8);
      vals[i] = e.getValue().toArray();
      size += fieldSize(names[i].length, vals[i].length);
      i++;
    }
    byte[] out = new byte[size];
    int off = 0;
    for (i = 0; i < n; i++) {
      off = putField(out, off, names[i], vals[i]);
    }
    return out;
  }

  /**
   * Adds record's fields to result: all of them when fields is null, else those named in fields
   * (names absent from the record are left out). Values are views of record, not copies.
   */
  public static void decode(byte[] record, Set<String> fields, Map<String, ByteIterator> result) {
    Cursor c = new Cursor(record);
    while (c.next()) {
      String name = c.name();
      if (fields == null || fields.contains(name)) {
        result.put(name, new ByteArrayByteIterator(record, c.valueOff, c.valueLen));
      }
    }
  }

  /**
   * The record with updates merged in: fields of old that updates does not name are kept as they
   * are, then updates' fields are added (each ByteIterator is consumed).
   */
  public static byte[] merge(byte[] old, Map<String, ByteIterator> updates) {
    byte[] upd = encode(updates);
    int[] kept = new int[32]; // [start, end) of each field of old that stays
    int n = 0;
    int keep = 0;
    Cursor c = new Cursor(old);
    while (c.next()) {
      if (!updates.containsKey(c.name())) {
        if (n + 2 > kept.length) {
          kept = Arrays.copyOf(kept, 2 * kept.length);
        }
        kept[n++] = c.start;
        kept[n++] = c.end;
        keep += c.end - c.start;
      }
    }
    byte[] out = new byte[keep + upd.length];
    int off = 0;
    for (int i = 0; i < n; i += 2) {
      System.arraycopy(old, kept[i], out, off, kept[i + 1] - kept[i]);
      off += kept[i + 1] - kept[i];
    }
    System.arraycopy(upd, 0, out, off, upd.length);
    return out;
  }

  private static int varintSize(int v) {
    int n = 1;
    while ((v >>>= 7) != 0) {
      n++;
    }
    return n;
  }

  private static int fieldSize(int nameLen, int valueLen) {
    return varintSize(nameLen) + nameLen + varintSize(valueLen) + valueLen;
  }

  private static int putVarint(byte[] out, int off, int v) {
    while ((v & ~0x7f) != 0) {
      out[off++] = (byte) ((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out[off++] = (byte) v;
    return off;
  }

  private static int putField(byte[] out, int off, byte[] name, byte[] value) {
    off = putVarint(out, off, name.length);
    System.arraycopy(name, 0, out, off, name.length);
    off += name.length;
    off = putVarint(out, off, value.length);
    System.arraycopy(value, 0, out, off, value.length);
    return off + value.length;
  }

  /** Walks the fields of one record: next() moves to the next field, false at the end. */
  private static final class Cursor {
    private final byte[] rec;
    private int pos;
    int start;
    int end;
    int nameOff;
    int nameLen;
    int valueOff;
    int valueLen;

    Cursor(byte[] rec) {
      this.rec = rec;
    }

    boolean next() {
      if (pos == rec.length) {
        return false;
      }
      start = pos;
      nameLen = varint();
      nameOff = pos;
      pos = skip(nameLen);
      valueLen = varint();
      valueOff = pos;
      pos = skip(valueLen);
      end = pos;
      return true;
    }

    String name() {
      return new String(rec, nameOff, nameLen, StandardCharsets.UTF_8);
    }

    private int skip(int len) {
      if (len > rec.length - pos) {
        throw new IllegalArgumentException("malformed record: a length of " + len + " at byte " + pos
            + " runs past its end (" + rec.length + " bytes)");
      }
      return pos + len;
    }

    private int varint() {
      int v = 0;
      for (int shift = 0; shift < 35; shift += 7) {
        if (pos == rec.length) {
          throw new IllegalArgumentException("malformed record: truncated length at byte " + pos);
        }
        byte b = rec[pos++];
        v |= (b & 0x7f) << shift;
        if (b >= 0) {
          if (v < 0) {
            break;
          }
          return v;
        }
      }
      throw new IllegalArgumentException("malformed record: bad length before byte " + pos);
    }
  }
}
