// SPDX-License-Identifier: Apache-2.0
package site.ycsb.db;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Fresh database directories under -Dtierkv.test.dir (Maven: build/ycsb/test-db), removed again by
 * {@link #removeAll}: each tierkv database holds a 1 GiB pool file.
 */
final class TestDirs {
  private static final List<Path> CREATED = new ArrayList<>();

  private TestDirs() {
  }

  private static Path root() {
    return new File(System.getProperty("tierkv.test.dir",
        System.getProperty("java.io.tmpdir") + "/tierkv-ycsb-test")).toPath();
  }

  /** An absent directory (removed if it was there) for a database; its parent exists. */
  static synchronized String fresh(String name) throws IOException {
    Path dir = root().resolve(name);
    remove(dir);
    Files.createDirectories(root());
    CREATED.add(dir);
    CREATED.add(root().resolve(name + "x")); // what tests derive from it
    CREATED.add(root().resolve(name + "-other"));
    return dir.toString();
  }

  /** Removes every directory fresh() handed out (call once the databases are closed). */
  static synchronized void removeAll() throws IOException {
    for (Path p : CREATED) {
      remove(p);
    }
    CREATED.clear();
  }

  private static void remove(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }
}
