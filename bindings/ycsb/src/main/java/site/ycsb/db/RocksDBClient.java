// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.io.File;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;
import site.ycsb.DBException;

/**
 * YCSB binding of RocksDB through rocksdbjni, the same shape as {@link TierkvClient}: the same
 * operations and record encoding ({@link KeyValueDB}, {@link RecordCodec}), one handle per JVM
 * shared by reference count, and RocksDB configured as tkv_bench's "rocksdb" engine configures it
 * (bench/engine_rocksdb.c), with tierkv's default memory budget:
 *
 * <ul>
 *   <li>{@code rocksdb.dir} (required): the database directory;
 *   <li>{@code rocksdb.write_buffer_size} (64M) and {@code rocksdb.max_write_buffer_number} (2):
 *       tierkv's memtable_size and memtables;
 *   <li>{@code rocksdb.block_cache_size} (256M, an LRU cache): tierkv's block_cache_size;
 *   <li>{@code rocksdb.sync} (false): WAL on, no sync per write, as tierkv's wal=1 sync=0;
 *   <li>{@code rocksdb.direct_io} (false): direct reads and direct flush/compaction I/O;
 *   <li>{@code rocksdb.background_jobs} (2): increase_parallelism and max_background_jobs;
 * </ul>
 * and, fixed: block-based tables with 4 KiB blocks and a 10-bit full bloom filter, lz4,
 * target_file_size_base 64 MiB, RocksDB's defaults for the rest. Another {@code rocksdb.*}
 * property fails init, naming the accepted ones.
 */
public class RocksDBClient extends KeyValueDB {
  public static final String DIR_PROPERTY = "rocksdb.dir";
  static final List<String> PROPERTIES = Arrays.asList(DIR_PROPERTY, "rocksdb.write_buffer_size",
      "rocksdb.max_write_buffer_number", "rocksdb.block_cache_size", "rocksdb.sync", "rocksdb.direct_io",
      "rocksdb.background_jobs");
  private static final long TARGET_FILE_SIZE = 64L << 20;

  // Guarded by RocksDBClient.class.
  private static Shared shared;
  private static int references;

  /** This client's view of the shared database: null before init and after cleanup. */
  private volatile Shared db;

  /** One open database and the native objects it uses. */
  private static final class Shared {
    final String dir;
    LRUCache cache;
    BloomFilter filter;
    Options options;
    WriteOptions writeOptions;
    RocksDB rocks;

    Shared(String dir) {
      this.dir = dir;
    }

    void close() {
      if (rocks != null) {
        rocks.close();
      }
      for (AutoCloseable o : new AutoCloseable[] {writeOptions, options, filter, cache}) {
        try {
          if (o != null) {
            o.close();
          }
        } catch (Exception e) {
          // the RocksObjects' close does not throw
        }
      }
    }
  }

  @Override
  protected String engine() {
    return "rocksdb";
  }

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String dir = p.getProperty(DIR_PROPERTY);
    if (dir == null || dir.isEmpty()) {
      throw new DBException("rocksdb: " + DIR_PROPERTY + " is not set (-p " + DIR_PROPERTY + "=/path/to/db)");
    }
    synchronized (RocksDBClient.class) {
      if (db != null) {
        return;
      }
      if (references == 0) {
        shared = open(dir, p);
      } else if (!shared.dir.equals(dir)) {
        throw new DBException("rocksdb: this JVM already has " + shared.dir + " open; " + DIR_PROPERTY + "="
            + dir + " differs");
      }
      references++;
      db = shared;
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (RocksDBClient.class) {
      if (db == null) {
        return;
      }
      db = null;
      if (--references > 0) {
        return;
      }
      Shared s = shared;
      shared = null;
      s.close();
    }
  }

  private static Shared open(String dir, Properties p) throws DBException {
    for (String k : p.stringPropertyNames()) {
      if (k.startsWith("rocksdb.") && !PROPERTIES.contains(k)) {
        throw new DBException("rocksdb: unknown property " + k + " (accepted: " + PROPERTIES + ")");
      }
    }
    Shared s = new Shared(dir);
    try {
      long writeBuffer = sizeProperty(p, "rocksdb.write_buffer_size", 64L << 20);
      int writeBuffers = (int) sizeProperty(p, "rocksdb.max_write_buffer_number", 2);
      long cacheBytes = sizeProperty(p, "rocksdb.block_cache_size", 256L << 20);
      int jobs = (int) sizeProperty(p, "rocksdb.background_jobs", 2);
      boolean sync = Boolean.parseBoolean(p.getProperty("rocksdb.sync", "false"));
      boolean direct = Boolean.parseBoolean(p.getProperty("rocksdb.direct_io", "false"));
      RocksDB.loadLibrary();
      new File(dir).mkdirs();
      s.cache = new LRUCache(cacheBytes);
      s.filter = new BloomFilter(10);
      BlockBasedTableConfig table = new BlockBasedTableConfig().setBlockCache(s.cache).setBlockSize(4096)
          .setFilterPolicy(s.filter);
      s.options = new Options().setCreateIfMissing(true).setIncreaseParallelism(jobs).setMaxBackgroundJobs(jobs)
          .setWriteBufferSize(writeBuffer).setMaxWriteBufferNumber(writeBuffers).setTableFormatConfig(table)
          .setCompressionType(CompressionType.LZ4_COMPRESSION).setTargetFileSizeBase(TARGET_FILE_SIZE)
          .setUseDirectReads(direct).setUseDirectIoForFlushAndCompaction(direct);
      s.writeOptions = new WriteOptions().setSync(sync).setDisableWAL(false);
      s.rocks = RocksDB.open(s.options, dir);
      System.err.println("rocksdb: opened " + dir + " (RocksDB " + RocksDB.rocksdbVersion() + ", rocksdbjni)"
          + " write_buffer_size=" + writeBuffer + " max_write_buffer_number=" + writeBuffers
          + " block_cache=lru:" + cacheBytes + " block_size=4096 filter=bloom:10 compression=lz4"
          + " target_file_size_base=" + TARGET_FILE_SIZE + " background_jobs=" + jobs + " wal=on sync=" + sync
          + " direct_io=" + direct);
      return s;
    } catch (RocksDBException | RuntimeException | LinkageError e) {
      s.close();
      throw new DBException("rocksdb: open " + dir + " failed: " + e.getMessage(), e);
    }
  }

  private RocksDB rocks() {
    Shared s = db;
    if (s == null) {
      throw new IllegalStateException("rocksdb: client used before init or after cleanup");
    }
    return s.rocks;
  }

  @Override
  protected byte[] get(byte[] key) throws RocksDBException {
    return rocks().get(key);
  }

  @Override
  protected void put(byte[] key, byte[] value) throws RocksDBException {
    Shared s = db;
    if (s == null) {
      throw new IllegalStateException("rocksdb: client used before init or after cleanup");
    }
    s.rocks.put(s.writeOptions, key, value);
  }

  @Override
  protected void delete(byte[] key) throws RocksDBException {
    Shared s = db;
    if (s == null) {
      throw new IllegalStateException("rocksdb: client used before init or after cleanup");
    }
    s.rocks.delete(s.writeOptions, key);
  }

  @Override
  protected int scan(byte[] start, byte[][] out) throws RocksDBException {
    int n = 0;
    try (RocksIterator it = rocks().newIterator()) {
      for (it.seek(start); n < out.length && it.isValid(); it.next()) {
        out[n++] = it.value();
      }
      it.status();
    }
    return n;
  }

  /** A RocksDB property of the shared database (for tests and diagnosis); null when closed. */
  public String property(String name) throws RocksDBException {
    Shared s = db;
    return s == null ? null : s.rocks.getProperty(name);
  }
}
