# tierkv -- top-level build.
#   make            build/libtierkv.so (+ soname links) and build/libtierkv.a
#   make test       install missing Debian packages, then build and run every test
#                   twice: a normal build and an ASan+UBSan build
#   make check-structure  the library's shape: src/db's one-way order (src/db/LAYERS),
#                   folders one way, no file over 800 lines, no function over 80
#                   without a written reason (tests/check_structure.py; part of make test)
#   make tsan       the concurrency tests under ThreadSanitizer
#   make soak       long randomized / crash runs (not part of `make test`)
#   make bench      the headline benchmark
#   make bench-silk the SILK-style open-loop experiment (~25 min; needs root for the drive cap)
#   make install PREFIX=/usr/local
#   make deps       apt-get the packages listed in DEB_PACKAGES when missing
# Variables: SAN=asan|tsan (sanitizer build into build/$(SAN)), WERROR=1 (CI sets it).

VERSION      := 0.1.0
SOMAJOR      := 0
PREFIX       ?= /usr/local
CC           ?= cc
SAN          ?=
BUILD        ?= build$(if $(SAN),/$(SAN))
WERROR       ?= $(if $(CI),1,0)

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
           -Wformat=2 -Wundef -Wvla -Wcast-align
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -fPIC -fvisibility=hidden -pthread $(WARN) -Iinclude -Isrc -I. -D_GNU_SOURCE
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
# LIBS: what the library needs (xxhash is compiled in: XXH_INLINE_ALL). No
# allocator: the library runs on its host's malloc (docs/design.md, "Linking").
# EXE_LIBS: what the tests and tkv_bench need besides.
LIBS    := -lpmem -llz4 -lpthread
EXE_LIBS := $(LIBS) -lm -ldl
# libtierkv.so exports only the public API (tierkv.map) and records only the
# libraries it uses.
SO_LDFLAGS := -Wl,--version-script=tierkv.map -Wl,--as-needed -Wl,-z,defs
ifeq ($(SAN),asan)
CFLAGS  += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
else ifeq ($(SAN),tsan)
CFLAGS  += -O1 -fsanitize=thread
LDFLAGS += -fsanitize=thread
endif

LIB_SRCS  := $(sort $(shell find src emul -name '*.c'))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# tests/test_embed_*.c link the shared library (as a host program does), the
# other tests the static one (they reach internals).
EMBED_SRCS := $(sort $(wildcard tests/test_embed_*.c))
TEST_SRCS := $(filter-out $(EMBED_SRCS),$(sort $(wildcard tests/test_*.c)))
TESTS     := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%) $(EMBED_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_HELPERS := $(filter-out $(TEST_SRCS) $(EMBED_SRCS),$(wildcard tests/*.c))
# RocksDB's release library (make deps), linked into test_embed_rocksdb when present.
ROCKSDB_REL := $(abspath $(wildcard build/deps/librocksdbjni-linux64.so))
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(BUILD)/obj/%.o)
# bench/: tkv_bench's modules (everything but the tkv_bench main)
# form libtkvbench.a, which the bench tests link too.
BENCH_LIB_SRCS := $(filter-out bench/tkv_bench.c,$(sort $(wildcard bench/*.c)))
BENCH_LIB_OBJS := $(BENCH_LIB_SRCS:%.c=$(BUILD)/obj/%.o)

DEB_PACKAGES := libpmem-dev libcmocka-dev libxxhash-dev liblz4-dev pkg-config \
                librocksdb-dev libleveldb-dev python3-matplotlib unzip python3 binutils

.PHONY: all lib tests test test-run check-structure tsan soak bench bench-fill bench-silk deps install clean
.SECONDARY:
all: lib

lib: $(BUILD)/libtierkv.a $(BUILD)/libtierkv.so

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libtierkv.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtierkv.so: $(LIB_OBJS) tierkv.map
	$(CC) -shared -Wl,-soname,libtierkv.so.$(SOMAJOR) $(SO_LDFLAGS) $(LDFLAGS) -o $(BUILD)/libtierkv.so.$(VERSION) \
	    $(LIB_OBJS) $(LIBS)
	ln -sf libtierkv.so.$(VERSION) $(BUILD)/libtierkv.so.$(SOMAJOR)
	ln -sf libtierkv.so.$(VERSION) $@

$(BUILD)/libtkvbench.a: $(BENCH_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_HELPER_OBJS) $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a -lcmocka $(EXE_LIBS)

$(BUILD)/tests/test_embed_%: $(BUILD)/obj/tests/test_embed_%.o $(BUILD)/obj/tests/testutil.o $(BUILD)/libtierkv.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/obj/tests/testutil.o -L$(BUILD) -ltierkv \
	    -Wl,--no-as-needed $(ROCKSDB_REL) -Wl,--as-needed -Wl,-rpath,$(abspath $(BUILD)) -lcmocka -ldl

tests: lib $(TESTS) $(BUILD)/tkv_bench

# test-run: build and run every test of one build flavour (SAN=...).
test-run: tests
	@python3 tests/check_exports.py --self-test $(BUILD)/libtierkv.so include/tierkv.h
	@TKV_BUILD=$(BUILD) bash tests/run.sh $(TESTS)

check-structure: lib
	@python3 tests/check_structure.py --self-test $(BUILD)/obj
	@python3 tests/check_structure.py $(BUILD)/obj

test: deps
	$(MAKE) check-structure
	$(MAKE) test-run
	$(MAKE) test-run SAN=asan

tsan: deps
	$(MAKE) SAN=tsan tests
	@TKV_BUILD=build/tsan bash tests/run.sh $(filter %_concurrent %_skiplist %_memtable %_cache %_version %_table %_matrix_db %_sched %_sched_db %_bgerror %_footprint,$(TESTS:build/%=build/tsan/%))

soak: deps
	$(MAKE) tests
	TKV_TEST_SCALE=20 bash tests/run.sh $(BUILD)/tests/test_model $(BUILD)/tests/test_crash

$(BUILD)/tkv_bench: $(BUILD)/obj/bench/tkv_bench.o $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a $(EXE_LIBS)

# bench: the headline comparison (bench/run_headline.sh; results in bench/results/).
bench: deps lib $(BUILD)/tkv_bench
	@BUILD=$(BUILD) bash bench/run_headline.sh

# bench-fill: fills of 300k to 20M writes with reads after, against RocksDB
# and LevelDB, direct I/O (bench/run_fill.sh).
bench-fill: deps lib $(BUILD)/tkv_bench
	@BUILD=$(BUILD) bash bench/run_fill.sh

# bench-silk: SILK-style peaks and valleys on a capped drive (bench/run_silk.sh).
bench-silk: deps lib $(BUILD)/tkv_bench
	@BUILD=$(BUILD) bash bench/run_silk.sh

# deps: Debian packages, then the RocksDB release build from the rocksdbjni jar
# (Maven Central) into build/deps/ -- a failed download only disables the
# "rocksdb" engine of tkv_bench ("rocksdb-deb" remains).
deps:
	@bash .ci/deps.sh $(DEB_PACKAGES)
	@bash bench/fetch_rocksdbjni.sh build

install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/tierkv.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libtierkv.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libtierkv.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libtierkv.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libtierkv.so.$(SOMAJOR)
	ln -sf libtierkv.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libtierkv.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' tierkv.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tierkv.pc

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
