// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import site.ycsb.DBException;

/**
 * YCSB binding of tierkv, through the JNI glue (class {@link Tierkv}).
 *
 * <p>Properties:
 * <ul>
 *   <li>{@code tierkv.dir} (required): the database directory, created (with its parents) when
 *       missing;
 *   <li>{@code tierkv.<option>=<value>}: every other property with the prefix goes to
 *       tkv_options_set (docs/options.md), in name order; one tierkv rejects fails init with
 *       tierkv's reason (unknown name, bad value, range);
 *   <li>{@code tierkv.jni}: the glue's absolute path, when not the one built into the jar (also
 *       a system property).
 * </ul>
 *
 * <p>All client threads of a JVM share one handle: the first init opens it, the last cleanup closes
 * it (a reference count under the class lock). The options of the first init count; a later init
 * with another {@code tierkv.dir} fails. Writes go through the WAL without a sync of their own
 * (tierkv's defaults: wal=1, sync=0). Operations: {@link KeyValueDB}.
 */
public class TierkvClient extends KeyValueDB {
  public static final String DIR_PROPERTY = "tierkv.dir";
  public static final String PREFIX = "tierkv.";

  // Guarded by TierkvClient.class.
  private static long shared;
  private static int references;
  private static String sharedDir;

  /** This client's view of the shared handle: 0 before init and after cleanup. */
  private volatile long db;

  @Override
  protected String engine() {
    return "tierkv";
  }

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String dir = p.getProperty(DIR_PROPERTY);
    if (dir == null || dir.isEmpty()) {
      throw new DBException("tierkv: " + DIR_PROPERTY + " is not set (-p " + DIR_PROPERTY + "=/path/to/db)");
    }
    synchronized (TierkvClient.class) {
      if (db != 0) {
        return;
      }
      if (references == 0) {
        shared = open(dir, p);
        sharedDir = dir;
      } else if (!sharedDir.equals(dir)) {
        throw new DBException("tierkv: this JVM already has " + sharedDir + " open; " + DIR_PROPERTY + "="
            + dir + " differs");
      }
      references++;
      db = shared;
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (TierkvClient.class) {
      if (db == 0) {
        return;
      }
      db = 0;
      if (--references > 0) {
        return;
      }
      long h = shared;
      shared = 0;
      sharedDir = null;
      try {
        Tierkv.close(h);
      } catch (TierkvException e) {
        throw new DBException("tierkv: " + e.getMessage(), e);
      }
    }
  }

  /** The number of clients of this JVM sharing the open handle (0: closed). */
  static synchronized int references() {
    return references;
  }

  private static long open(String dir, Properties p) throws DBException {
    String jni = p.getProperty(Tierkv.JNI_PROPERTY);
    if (jni != null && System.getProperty(Tierkv.JNI_PROPERTY) == null) {
      System.setProperty(Tierkv.JNI_PROPERTY, jni);
    }
    List<String> names = new ArrayList<>();
    List<String> values = new ArrayList<>();
    for (String k : new TreeSet<>(p.stringPropertyNames())) {
      if (k.startsWith(PREFIX) && !k.equals(DIR_PROPERTY) && !k.equals(Tierkv.JNI_PROPERTY)) {
        names.add(k.substring(PREFIX.length()));
        values.add(p.getProperty(k));
      }
    }
    File parent = new File(dir).getAbsoluteFile().getParentFile();
    if (parent != null) {
      parent.mkdirs(); // tkv_open creates the directory, not its parents
    }
    long h;
    try {
      h = Tierkv.open(dir, names.toArray(new String[0]), values.toArray(new String[0]));
    } catch (LinkageError e) {
      throw new DBException("tierkv: cannot load the JNI glue: " + e, e);
    } catch (TierkvException e) {
      throw new DBException("tierkv: open " + dir + " failed: " + e.getMessage()
          + (e.getMessage().contains("rejected") ? " (tierkv.<option> properties go to tkv_options_set;"
              + " docs/options.md lists the options)" : ""), e);
    }
    String opts = Tierkv.property(h, "tkv.options");
    System.err.println("tierkv: opened " + dir + " (tierkv " + versionString(Tierkv.version()) + ", glue "
        + Tierkv.libraryPath() + ") options: " + (opts == null ? "?" : opts.trim().replace('\n', ' ')));
    return h;
  }

  private static String versionString(int v) {
    return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
  }

  private long handle() {
    long h = db;
    if (h == 0) {
      throw new IllegalStateException("tierkv: client used before init or after cleanup");
    }
    return h;
  }

  @Override
  protected byte[] get(byte[] key) throws TierkvException {
    return Tierkv.get(handle(), key);
  }

  @Override
  protected void put(byte[] key, byte[] value) throws TierkvException {
    Tierkv.put(handle(), key, value);
  }

  @Override
  protected void delete(byte[] key) throws TierkvException {
    Tierkv.delete(handle(), key);
  }

  @Override
  protected int scan(byte[] start, byte[][] out) throws TierkvException {
    return Tierkv.scan(handle(), start, null, out);
  }

  /** tkv_property of the shared handle (for tests and diagnosis); null when closed or unknown. */
  public String property(String name) {
    long h = db;
    return h == 0 ? null : Tierkv.property(h, name);
  }
}
