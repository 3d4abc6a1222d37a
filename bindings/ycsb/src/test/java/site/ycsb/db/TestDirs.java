package site.ycsb.db;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Fresh database directories under -Dtierkv.test.dir (Maven: build/ycsb/test-db). */
final class TestDirs {
  private TestDirs() {
  }

  static String fresh(String name) throws IOException {
    Path root = new File(System.getProperty("tierkv.test.dir", System.getProperty("java.io.tmpdir") + "/tierkv-ycsb-test"))
        .toPath();
    Path dir = root.resolve(name);
    if (Files.exists(dir)) {
      try (Stream<Path> s = Files.walk(dir)) {
        for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
          Files.delete(p);
        }
      }
    }
    Files.createDirectories(root);
    return dir.toString();
  }
}
