// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * tierkv's C API (include/tierkv.h) as static native methods, implemented by the JNI glue
 * libtierkvjni.so (bindings/ycsb/src/main/c/tierkv_jni.c).
 *
 * <p>The glue is loaded from an absolute path: the system property {@code tierkv.jni} when set,
 * else the path written into this jar at build time (resource {@code tierkv-jni.properties}).
 * Loading fails with an {@link UnsatisfiedLinkError} naming the path.
 *
 * <p>A handle is a {@code tkv_db *}; 0 means closed (a call on it throws
 * IllegalStateException). Handles are safe for concurrent use by any number of threads, but
 * {@link #close} must not race with other calls on the same handle. No call exits or aborts
 * the JVM: failures are {@link TierkvException}s carrying tierkv's message.
 */
public final class Tierkv {
  /** The system property naming the glue's absolute path. */
  public static final String JNI_PROPERTY = "tierkv.jni";

  private static final String LIBRARY_PATH = load();

  private Tierkv() {
  }

  private static String load() {
    String path = System.getProperty(JNI_PROPERTY);
    if (path == null || path.isEmpty()) {
      path = builtInPath();
    }
    if (path == null || path.isEmpty()) {
      throw new UnsatisfiedLinkError("tierkv: no JNI library path: set -D" + JNI_PROPERTY
          + "=/absolute/path/libtierkvjni.so (make builds build/libtierkvjni.so)");
    }
    File f = new File(path);
    if (!f.isAbsolute() || !f.isFile()) {
      throw new UnsatisfiedLinkError("tierkv: JNI library " + path
          + " is not an absolute path to an existing file (run make in the tierkv tree, or set -D"
          + JNI_PROPERTY + "=...)");
    }
    System.load(f.getAbsolutePath());
    return f.getAbsolutePath();
  }

  private static String builtInPath() {
    try (InputStream in = Tierkv.class.getResourceAsStream("/tierkv-jni.properties")) {
      if (in == null) {
        return null;
      }
      Properties p = new Properties();
      p.load(in);
      String path = p.getProperty("path");
      return path == null || path.startsWith("${") ? null : path;
    } catch (IOException e) {
      return null;
    }
  }

  /** The absolute path of the glue this JVM loaded. */
  public static String libraryPath() {
    return LIBRARY_PATH;
  }

  /** Opens (creates) the database in dir with tkv_options_set(names[i], values[i]) in order. */
  public static native long open(String dir, String[] names, String[] values) throws TierkvException;

  /** tkv_close: the handle is freed even when this throws. */
  public static native void close(long db) throws TierkvException;

  /** The value of key, or null when it is absent. */
  public static native byte[] get(long db, byte[] key) throws TierkvException;

  /** Sets key to value (WAL on unless the options turn it off; no sync unless the options ask). */
  public static native void put(long db, byte[] key, byte[] value) throws TierkvException;

  /** Removes key (a no-op when absent). */
  public static native void delete(long db, byte[] key) throws TierkvException;

  /**
   * The entries from the first key &gt;= start in key order, at most values.length of them, into
   * values[0..n) and, when keys is not null, keys[0..n); returns n.
   */
  public static native int scan(long db, byte[] start, byte[][] keys, byte[][] values)
      throws TierkvException;

  /** tkv_property: a text report ("tkv.stats", "tkv.options", ...), or null for an unknown name. */
  public static native String property(long db, String name);

  /** tkv_version() of the loaded library: major*10000 + minor*100 + patch. */
  public static native int version();

  /**
   * {the shared object that defines the process-wide malloc (what the JVM calls), the one whose
   * malloc the glue and tierkv call}; the first stays libc's: loading the glue does not change the
   * JVM's allocator.
   */
  public static native String[] mallocOwners();

  /**
   * n tkv_get calls made from C over the keys of klen bytes packed in keys (round robin), each value
   * freed; no JVM crossing per call. The baseline of {@link BindingCost}. Returns the bytes read.
   */
  public static native long loopGet(long db, byte[] keys, int klen, int n) throws TierkvException;

  /** n tkv_put calls made from C of value over the packed keys (round robin). Returns n. */
  public static native long loopPut(long db, byte[] keys, int klen, byte[] value, int n)
      throws TierkvException;
}
