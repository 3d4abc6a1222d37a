// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;

/**
 * What the binding adds to one operation, measured in one process: the same gets and puts made from
 * C (Tierkv.loopGet/loopPut: one JNI call for n operations) and from Java (one JNI call each), then
 * with what TierkvClient does around them (decoding the record; get, merge and put for an update).
 * The variants run interleaved, round after round, so a busy machine slows them alike; each figure
 * is the median of the rounds (the first two are JIT warm-up and not counted).
 *
 * <p>The records (YCSB's default shape: 10 fields of 100 bytes, 1,080 bytes encoded, 19-byte keys)
 * are few enough to stay in the memtable: this measures the binding against tierkv's cheapest path,
 * not the engine.
 *
 * <p>usage: java -cp 'build/ycsb/tierkv-ycsb.jar:build/ycsb/lib/*' site.ycsb.db.BindingCost DIR
 * [RECORDS (10000)] [GETS per round (200000)] [PUTS per round (10000)] [ROUNDS (12)]; DIR must not
 * exist (make ycsb-cost).
 */
public final class BindingCost {
  private BindingCost() {
  }

  private interface Body {
    void run(int n) throws Exception;
  }

  private static final class Variant {
    final String name;
    final int n;
    final Body body;
    final List<Double> nsPerOp = new ArrayList<>();

    Variant(String name, int n, Body body) {
      this.name = name;
      this.n = n;
      this.body = body;
    }

    void measure(boolean keep) throws Exception {
      long t0 = System.nanoTime();
      body.run(n);
      long t1 = System.nanoTime();
      if (keep) {
        nsPerOp.add((double) (t1 - t0) / n);
      }
    }

    double median() {
      double[] v = nsPerOp.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: BindingCost DIR [RECORDS] [GETS] [PUTS] [ROUNDS]");
      System.exit(2);
    }
    String dir = args[0];
    int records = args.length > 1 ? Integer.parseInt(args[1]) : 10000;
    int gets = args.length > 2 ? Integer.parseInt(args[2]) : 200000;
    int puts = args.length > 3 ? Integer.parseInt(args[3]) : 10000;
    int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 12;
    if (new File(dir).exists()) {
      System.err.println("BindingCost: " + dir + " exists; give a new directory");
      System.exit(2);
    }
    final int klen = 19;
    byte[][] keys = new byte[records][];
    byte[] packed = new byte[records * klen];
    for (int i = 0; i < records; i++) {
      keys[i] = String.format("user%015d", i).getBytes(StandardCharsets.UTF_8);
      System.arraycopy(keys[i], 0, packed, i * klen, klen);
    }
    Random rnd = new Random(42);
    Map<String, ByteIterator> fields = new LinkedHashMap<>();
    for (int f = 0; f < 10; f++) {
      byte[] v = new byte[100];
      rnd.nextBytes(v);
      fields.put("field" + f, new ByteArrayByteIterator(v));
    }
    final byte[] rec = RecordCodec.encode(fields);
    final byte[] fieldValue = Arrays.copyOf(rec, 100);

    long h = Tierkv.open(dir, new String[0], new String[0]);
    try {
      for (int i = 0; i < records; i++) {
        Tierkv.put(h, keys[i], rec);
      }
      int[] next = {0};
      Variant[] vs = {
          new Variant("get, n calls from C", gets, n -> Tierkv.loopGet(h, packed, klen, n)),
          new Variant("get, one JNI call each", gets, n -> {
            for (int i = 0; i < n; i++) {
              Tierkv.get(h, keys[next[0]++ % records]);
            }
          }),
          new Variant("read: JNI get + decode all fields", gets, n -> {
            for (int i = 0; i < n; i++) {
              RecordCodec.decode(Tierkv.get(h, keys[next[0]++ % records]), null, new HashMap<>());
            }
          }),
          new Variant("put, n calls from C", puts, n -> Tierkv.loopPut(h, packed, klen, rec, n)),
          new Variant("put, one JNI call each", puts, n -> {
            for (int i = 0; i < n; i++) {
              Tierkv.put(h, keys[next[0]++ % records], rec);
            }
          }),
          new Variant("update: JNI get + merge one field + put", puts, n -> {
            for (int i = 0; i < n; i++) {
              byte[] k = keys[next[0]++ % records];
              Map<String, ByteIterator> one = new HashMap<>();
              one.put("field3", new ByteArrayByteIterator(fieldValue));
              Tierkv.put(h, k, RecordCodec.merge(Tierkv.get(h, k), one));
            }
          }),
      };
      for (int r = 0; r < rounds + 2; r++) {
        for (Variant v : vs) {
          v.measure(r >= 2);
        }
      }
      double cGet = vs[0].median();
      double cPut = vs[3].median();
      System.out.printf("binding cost per operation, tierkv %s, %d records of %d bytes in the memtable, "
          + "medians of %d rounds (ns/op):%n", Tierkv.libraryPath(), records, rec.length, rounds);
      for (int i = 0; i < vs.length; i++) {
        double base = i < 3 ? cGet : cPut;
        String ref = i < 3 ? "C get" : "C put";
        if (i == 5) {
          base = cGet + cPut;
          ref = "C get + C put";
        }
        double m = vs[i].median();
        System.out.printf("  %-42s %8.0f%s%n", vs[i].name, m,
            (i == 0 || i == 3) ? "" : String.format("   (+%.0f over %s)", m - base, ref));
      }
    } finally {
      Tierkv.close(h);
    }
  }
}
