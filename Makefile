# SPDX-License-Identifier: Apache-2.0
# tierkv -- top-level build.
#   make            build/libtierkv.so (+ soname links), build/libtierkv.a and build/tkv,
#                   the command-line tool (tools/; docs/tkv.md)
#   make test       install missing Debian packages, then build and run every test
#                   twice: a normal build and an ASan+UBSan build; then make ycsb-test
#   make check-structure  the library's shape: src/db's one-way order (src/db/LAYERS),
#                   folders one way, no file over 800 lines, no function over 80
#                   without a written reason (tests/: 2,000 and 160); every source
#                   file's SPDX line and job comment (tests/check_structure.py; part of make test)
#   make tsan       the concurrency tests under ThreadSanitizer
#   make soak       DURATION (10m; s/m/h suffixes) of mixed load on one database with
#                   reopens, every read checked against a model; logs RSS, open fds, pool
#                   and DRAM use every SOAK_INTERVAL (60s) to build/soak.log and fails
#                   unless RSS plateaus and fds stay flat (tests/soak/, docs/testing.md)
#   make soak-model the long randomized model and crash runs (TKV_TEST_SCALE=20)
#   make fuzz       the libFuzzer targets of fuzz/ (clang, installed on demand), each
#                   for FUZZ_SECONDS (default 60) from its corpus; FUZZ_TARGETS picks
#                   some (docs/fuzzing.md). make test replays every corpus once (gcc)
#   make fuzz-corpus  regenerates the seed corpora from files the library writes
#   make crashtest  kill -9 rounds with writer threads and the full fault-injection
#                   sweep (ROUNDS, default 1000; THREADS, default 4; SEED; not part of `make test`)
#   make crashtest-power  real power cuts: writer threads on ext4 over a loop device, the
#                   device frozen at a random moment and its image copied, then the copy
#                   mounted, reopened and checked (tests/powercut/; ROUNDS, default 200;
#                   THREADS, default 4; SEED; EXTRA_OPTS, e.g. pmem_mode=msync; needs
#                   root and loop devices, else it says SKIP; not part of `make test`)
#   make bench      the headline benchmark
#   make bench-silk the SILK-style open-loop experiment (~25 min; needs root for the drive cap)
#   make install PREFIX=/usr/local   (the header, the libraries, tierkv.pc and bin/tkv)
#   make ycsb       tierkv and RocksDB under the real YCSB client, load + workloads A-F
#                   (bindings/ycsb/run_ycsb.sh; RECORDS, OPS, THREADS; docs/ycsb.md)
#   make ycsb-test  the binding's JUnit tests and a short YCSB run (part of make test)
#   make ycsb-build the YCSB binding alone (the JNI glue, then Maven and its JUnit tests)
#   make ycsb-cost  what the binding adds per operation against the same calls from C
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
LIBS    := -lpmem -luring -llz4 -lpthread
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
else ifeq ($(SAN),fuzz)
# make fuzz: clang, the library and targets instrumented for libFuzzer.
CFLAGS  += -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRCS  := $(sort $(shell find src emul -name '*.c'))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# tests/test_embed_*.c link the shared library (as a host program does), the
# other tests the static one (they reach internals).
EMBED_SRCS := $(sort $(wildcard tests/test_embed_*.c))
TEST_SRCS := $(filter-out $(EMBED_SRCS),$(sort $(wildcard tests/test_*.c)))
# The benchmark harness's own tests sit beside it, in bench/tests/.
BENCH_TEST_SRCS := $(sort $(wildcard bench/tests/test_*.c))
TESTS     := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%) $(EMBED_SRCS:tests/%.c=$(BUILD)/tests/%) \
             $(BENCH_TEST_SRCS:bench/tests/%.c=$(BUILD)/tests/%)
# The longest binaries, longest first (ASan timings on 2 cores): tests/run.sh
# runs two at a time in the order given, so these start first and the short
# ones fill the other slot.
SLOW_TESTS := test_sched_db test_matrix_db test_model test_memory test_crash test_matrix_l1 test_fault_sweep \
              test_checkpoint test_sst_faults test_footprint test_table test_async test_bench_engines test_bench_loadgen
TESTS_RUN := $(foreach t,$(SLOW_TESTS),$(filter $(BUILD)/tests/$(t),$(TESTS))) \
             $(filter-out $(SLOW_TESTS:%=$(BUILD)/tests/%),$(TESTS))
TEST_HELPERS := $(filter-out $(TEST_SRCS) $(EMBED_SRCS),$(wildcard tests/*.c))
# RocksDB's release library (make deps), linked into test_embed_rocksdb when present.
ROCKSDB_REL := $(abspath $(wildcard build/deps/librocksdbjni-linux64.so))
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(BUILD)/obj/%.o)
# fuzz/: a libFuzzer target per decoder (fuzz/fuzz_<name>.c), the helpers
# they share, and replay_main.c, which replays a corpus without libFuzzer:
# $(BUILD)/fuzz/replay_<name> (gcc, part of test-run) replays
# fuzz/corpus/<name>/; make fuzz builds $(BUILD)/fuzz/fuzz_<name> with clang.
FUZZ_SRCS    := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_NAMES   := $(FUZZ_SRCS:fuzz/fuzz_%.c=%)
FUZZ_HELPER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out $(FUZZ_SRCS) fuzz/replay_main.c fuzz/gen_corpus.c,$(wildcard fuzz/*.c)))
FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(BUILD)/fuzz/replay_%)
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_DEB_PACKAGES := clang
# bench/: tkv_bench's modules (everything but the tkv_bench main)
# form libtkvbench.a, which the bench tests link too.
BENCH_LIB_SRCS := $(filter-out bench/tkv_bench.c,$(sort $(wildcard bench/*.c)))
BENCH_LIB_OBJS := $(BENCH_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# tools/: the tkv command-line tool, linked with libtierkv.a (its dump
# commands use internal readers).
TOOL_SRCS := $(sort $(wildcard tools/*.c))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
# tests/soak/: the soak driver, $(BUILD)/tkv_soak (make soak).
SOAK_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard tests/soak/*.c)))
# tests/powercut/: the power-cut writer and checker, $(BUILD)/powercut/pc_* (make crashtest-power).
PC_COMMON_OBJ := $(BUILD)/obj/tests/powercut/pc_common.o
PC_BINS := $(BUILD)/powercut/pc_writer $(BUILD)/powercut/pc_check
# What crashtest-power needs besides: mkfs.ext4, dmsetup (the device-mapper cut), mkfs.xfs (the
# reflink cut, where the kernel has no device-mapper).
POWERCUT_DEB_PACKAGES := dmsetup e2fsprogs xfsprogs
DURATION ?= 10m

DEB_PACKAGES := libpmem-dev liburing-dev libcmocka-dev libxxhash-dev liblz4-dev pkg-config \
                librocksdb-dev libleveldb-dev python3-matplotlib unzip python3 binutils \
                openjdk-17-jdk-headless maven clang-format $(POWERCUT_DEB_PACKAGES)

.PHONY: go-test bench-raft
.PHONY: all lib tool tests test test-run check-format format check-structure tsan soak soak-model crashtest crashtest-power fuzz fuzz-corpus bench bench-fill bench-silk deps install clean \
        jni ycsb-build ycsb ycsb-test ycsb-cost
.SECONDARY:
all: lib tool

lib: $(BUILD)/libtierkv.a $(BUILD)/libtierkv.so

tool: $(BUILD)/tkv

$(BUILD)/tkv: $(TOOL_OBJS) $(BUILD)/libtierkv.a
	$(CC) $(LDFLAGS) -o $@ $(TOOL_OBJS) $(BUILD)/libtierkv.a $(EXE_LIBS)

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

$(BUILD)/tests/test_bench_%: $(BUILD)/obj/bench/tests/test_bench_%.o $(TEST_HELPER_OBJS) $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_HELPER_OBJS) $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a -lcmocka $(EXE_LIBS)

$(BUILD)/tests/test_embed_%: $(BUILD)/obj/tests/test_embed_%.o $(BUILD)/obj/tests/testutil.o $(BUILD)/libtierkv.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/obj/tests/testutil.o -L$(BUILD) -ltierkv \
	    -Wl,--no-as-needed $(ROCKSDB_REL) -Wl,--as-needed -Wl,-rpath,$(abspath $(BUILD)) -lcmocka -ldl

# The tests include tests/test_tkv_cli, which runs $(BUILD)/tkv.
tests: lib $(TESTS) $(BUILD)/tkv_bench $(BUILD)/tkv $(BUILD)/tkv_soak $(FUZZ_REPLAYS)

$(BUILD)/tkv_soak: $(SOAK_OBJS) $(BUILD)/libtierkv.a
	$(CC) $(LDFLAGS) -o $@ $(SOAK_OBJS) $(BUILD)/libtierkv.a $(EXE_LIBS)

$(BUILD)/obj/fuzz/replay_main.o: CFLAGS += -DFUZZ_CORPUS_ROOT='"$(abspath fuzz/corpus)"'
$(BUILD)/fuzz/replay_%: $(BUILD)/obj/fuzz/fuzz_%.o $(BUILD)/obj/fuzz/replay_main.o $(FUZZ_HELPER_OBJS) $(BUILD)/libtierkv.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(EXE_LIBS)

$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/fuzz/fuzz_%.o $(FUZZ_HELPER_OBJS) $(BUILD)/libtierkv.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(EXE_LIBS)

# fuzz: each target of FUZZ_TARGETS for FUZZ_SECONDS from its corpus, one at
# a time under nice (fuzz/run.sh; new inputs go to build/fuzz/work/, findings
# to build/fuzz/findings/). Needs clang (installed here, not by make test).
fuzz:
	@bash .ci/deps.sh $(FUZZ_DEB_PACKAGES)
	$(MAKE) SAN=fuzz CC=clang WERROR=0 $(FUZZ_TARGETS:%=build/fuzz/fuzz/fuzz_%)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/run.sh $(FUZZ_TARGETS)

# fuzz-corpus: rewrites fuzz/corpus/ from files the library writes (fuzz/gen_corpus.c).
fuzz-corpus: $(BUILD)/fuzz/gen_corpus
	$(BUILD)/fuzz/gen_corpus fuzz/corpus
$(BUILD)/fuzz/gen_corpus: $(BUILD)/obj/fuzz/gen_corpus.o $(FUZZ_HELPER_OBJS) $(BUILD)/libtierkv.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(EXE_LIBS)

# test-run: build and run every test of one build flavour (SAN=...), then
# replay every fuzz corpus once.
test-run: tests
	@python3 tests/check_exports.py --self-test $(BUILD)/libtierkv.so include/tierkv.h
	@TKV_BUILD=$(BUILD) bash tests/run.sh $(TESTS_RUN) $(FUZZ_REPLAYS)

# format / check-format: the C sources in .clang-format's style (clang-format
# 14, Debian's); make test fails on a file that is not. The Go binding's cgo
# glue follows gofmt's neighbours, and examples/ keeps the hand layout the
# README shows: both are left out.
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v -e '^bindings/go/' -e '^examples/')
format:
	@clang-format -i $(FORMAT_SRCS)
check-format:
	@command -v clang-format >/dev/null || { echo "check-format: clang-format not found (make deps installs it)" >&2; exit 1; }
	@clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "check-format: $(words $(FORMAT_SRCS)) files formatted"

check-structure: lib
	@python3 tests/check_structure.py --self-test $(BUILD)/obj
	@python3 tests/check_structure.py $(BUILD)/obj

test: deps
	$(MAKE) check-format
	$(MAKE) check-structure
	$(MAKE) test-run
	$(MAKE) test-run SAN=asan
	$(MAKE) ycsb-test

tsan: deps
	$(MAKE) SAN=tsan tests
	@TKV_BUILD=build/tsan bash tests/run.sh $(filter %_concurrent %_checkpoint %_stats %_readopts %_skiplist %_memtable %_cache %_version %_table %_matrix_db \
	    %_sched_clock %_sched_monitor %_sched_tadapt %_sched_ratelimit %_sched_wctl %_sched_flushprog \
	    %_sched_drainmeter %_sched_db %_sched_bgpool %_env %_deep_yield %_uring %_async %_bgerror %_footprint %_wal %_wal_recycle \
	    %_readonly %_rangedel_threads,$(TESTS:build/%=build/tsan/%))

# soak: the soak driver for DURATION (tests/soak/soak.c; SOAK_* variables in
# its header comment), at nice 10; the database lives in $(BUILD)/soak-db.
soak: deps lib $(BUILD)/tkv_soak
	SOAK_LOG=$${SOAK_LOG:-$(BUILD)/soak.log} SOAK_DIR=$${SOAK_DIR:-$(BUILD)/soak-db} nice -n 10 $(BUILD)/tkv_soak $(DURATION)

# soak-model: the long randomized model and crash runs (what `make soak` ran before).
soak-model: deps
	$(MAKE) tests
	TKV_TEST_SCALE=20 bash tests/run.sh $(BUILD)/tests/test_model $(BUILD)/tests/test_crash

# crashtest: tests/test_crash_threads.c for ROUNDS rounds (kill -9 at random
# moments, some with a crashsim pool and WAL tails cut to their synced size),
# then tests/test_fault_sweep.c over every injection point. A failure keeps its
# directory and prints the seed. Log: $(BUILD)/crashtest.log.
crashtest: SHELL := /bin/bash
crashtest: $(BUILD)/tests/test_crash_threads $(BUILD)/tests/test_fault_sweep
	@set -o pipefail; { TKV_CRASHTEST_ROUNDS=$(or $(ROUNDS),1000) TKV_CRASHTEST_THREADS=$(or $(THREADS),4) \
	    $(if $(SEED),TKV_TEST_SEED=$(SEED)) nice $(BUILD)/tests/test_crash_threads && \
	  TKV_FAULT_SWEEP=full $(if $(SEED),TKV_TEST_SEED=$(SEED)) nice $(BUILD)/tests/test_fault_sweep; } 2>&1 | \
	    tee $(BUILD)/crashtest.log

# crashtest-power: real power cuts on ext4 over a loop device (tests/powercut/run.py,
# tests/powercut/README.md). Prints a line per round and "N passed, M failed"; a
# failure keeps its image copy and progress files (paths printed) under
# $(BUILD)/powercut/work. Installs its Debian packages first when root.
crashtest-power: $(PC_BINS)
	@if [ "$$(id -u)" = 0 ]; then bash .ci/deps.sh $(POWERCUT_DEB_PACKAGES) || true; fi
	@python3 tests/powercut/run.py --bin $(BUILD)/powercut --workdir $(BUILD)/powercut/work \
	    --rounds $(or $(ROUNDS),200) --threads $(or $(THREADS),4) $(if $(SEED),--seed $(SEED)) \
	    $(if $(EXTRA_OPTS),--extra-opts '$(EXTRA_OPTS)') $(if $(CHECKPOINT_MS),--checkpoint-ms $(CHECKPOINT_MS))

$(BUILD)/powercut/%: $(BUILD)/obj/tests/powercut/%.o $(PC_COMMON_OBJ) $(BUILD)/libtierkv.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(PC_COMMON_OBJ) $(BUILD)/libtierkv.a $(EXE_LIBS)

$(BUILD)/tkv_bench: $(BUILD)/obj/bench/tkv_bench.o $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libtkvbench.a $(BUILD)/libtierkv.a $(EXE_LIBS)

# bench: the headline comparison (bench/run_headline.sh; results in bench/results/).
# The bench targets install deps before they build anything: under make -j a
# prerequisite list would compile against headers not installed yet.
bench: deps
	@$(MAKE) --no-print-directory lib $(BUILD)/tkv_bench
	@BUILD=$(BUILD) bash bench/run_headline.sh

# bench-fill: fills of 300k to 20M writes with reads after, against RocksDB
# and LevelDB, direct I/O (bench/run_fill.sh).
bench-fill: deps
	@$(MAKE) --no-print-directory lib $(BUILD)/tkv_bench
	@BUILD=$(BUILD) bash bench/run_fill.sh

# bench-silk: SILK-style peaks and valleys on a capped drive (bench/run_silk.sh).
bench-silk: deps
	@$(MAKE) --no-print-directory lib $(BUILD)/tkv_bench
	@BUILD=$(BUILD) bash bench/run_silk.sh

# go-test: the Go binding (bindings/go), its raft store
# (bindings/go/raftstore) and tkv-raftd (bindings/go/raftd, whose tests run
# three daemons on 127.0.0.1; raftd/boltd, its raft-boltdb build on raft
# v1.7.3, is vetted; raftstore runs last so that the run closes on an "ok"
# line, not a "no test files" one): go vet and go test -race in each, against
# build/libtierkv.a. Skipped, saying so, when Go is missing (go on PATH, else
# /usr/local/go/bin/go). Go modules come from the Go module proxy.
GO_CMD ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go))
GO_MODULES := bindings/go bindings/go/raftd/boltd bindings/go/raftd bindings/go/raftstore
go-test: lib
	@if [ -z "$(GO_CMD)" ]; then echo "go-test: SKIP: no go on PATH or at /usr/local/go/bin/go"; exit 0; fi; \
	set -e; for m in $(GO_MODULES); do \
	    echo "go-test: $$m: go vet, go test -race"; \
	    (cd $$m && $(GO_CMD) vet ./... && $(GO_CMD) test -race -count=1 ./...); \
	done

# bench-raft: hashicorp/raft's ten store benchmarks and a synced append of 64 x
# 1 KiB entries on raft-tierkv, raft-wal and raft-boltdb, medians of COUNT (3)
# runs of BENCHTIME (1s) each, one table (bench/raft/run_raft.sh; results in
# bench/results/raft-<date>/); then writes/s and p99 through tkv-raftd, 3
# nodes on 127.0.0.1, on each store (bench/raft/run_raftd.sh).
bench-raft: lib
	@bash bench/raft/run_raft.sh

# jni: the YCSB binding's JNI glue, $(BUILD)/libtierkvjni.so:
# tierkv_jni.c and $(BUILD)/libtierkv.a in one shared object that exports only
# the JNI entry points (jni.map; --exclude-libs keeps lz4's and xxhash's copies
# local too), so that it loads beside rocksdbjni in one JVM without a name in
# common. JAVA_HOME: the environment's, else the JDK of the javac on PATH.
JAVA_HOME ?= $(patsubst %/bin/javac,%,$(realpath $(shell command -v javac 2>/dev/null)))
JNI_SRC   := bindings/ycsb/src/main/c/tierkv_jni.c
JNI_OBJ   := $(BUILD)/obj/bindings/ycsb/tierkv_jni.o
JNI_LIBS   = $(patsubst -llz4,-l:liblz4.a,$(patsubst -lxxhash,-l:libxxhash.a,$(LIBS)))
jni: $(BUILD)/libtierkvjni.so
$(JNI_OBJ): $(JNI_SRC)
	@test -f "$(JAVA_HOME)/include/jni.h" || { echo "jni.h not found under JAVA_HOME=$(JAVA_HOME): install a JDK (make deps) or set JAVA_HOME" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I"$(JAVA_HOME)/include" -I"$(JAVA_HOME)/include/linux" -MMD -MP -c $< -o $@
$(BUILD)/libtierkvjni.so: $(JNI_OBJ) $(BUILD)/libtierkv.a bindings/ycsb/src/main/c/jni.map
	$(CC) -shared $(LDFLAGS) -o $@ $(JNI_OBJ) $(BUILD)/libtierkv.a -Wl,--version-script=bindings/ycsb/src/main/c/jni.map \
	    -Wl,--exclude-libs,ALL -Wl,-z,defs $(JNI_LIBS) -ldl

# ycsb-build: the glue, then the Maven project, its JUnit tests
# included (bindings/ycsb/build.sh; Maven fetches what it lacks from Maven Central).
YCSB_JNI := $(abspath build/libtierkvjni.so)
ycsb-build:
	$(MAKE) jni
	@TIERKV_JNI=$(YCSB_JNI) bash bindings/ycsb/build.sh

# ycsb: load + workloads A-F on tierkv and RocksDB, one table (RECORDS, OPS,
# THREADS, ... : bindings/ycsb/run_ycsb.sh).
ycsb: deps ycsb-build
	@TIERKV_JNI=$(YCSB_JNI) bash bindings/ycsb/run_ycsb.sh

# ycsb-test: the JUnit tests (in ycsb-build) and a short YCSB run of both
# engines, 20k records, workload A, dataintegrity=true.
ycsb-test: deps ycsb-build
	@TIERKV_JNI=$(YCSB_JNI) RECORDS=20000 OPS=20000 WORKLOADS=a DATAINTEGRITY=1 NICE=10 DB=$(abspath build/ycsb/test-run-db) \
	    OUT=build/ycsb/results/test bash bindings/ycsb/run_ycsb.sh

# ycsb-cost: what the binding adds to one get, put and update against the same
# calls made from C, in one process (site.ycsb.db.BindingCost).
YCSB_COST_DB := /tmp/tkv_ycsb_cost
ycsb-cost: ycsb-build
	@rm -rf $(YCSB_COST_DB); java -Dtierkv.jni=$(YCSB_JNI) -cp 'build/ycsb/tierkv-ycsb.jar:build/ycsb/lib/*' \
	    site.ycsb.db.BindingCost $(YCSB_COST_DB); rc=$$?; rm -rf $(YCSB_COST_DB); exit $$rc

# deps: Debian packages, then the RocksDB release build from the rocksdbjni jar
# (Maven Central) into build/deps/ -- a failed download only disables the
# "rocksdb" engine of tkv_bench ("rocksdb-deb" remains).
deps:
	@bash .ci/deps.sh $(DEB_PACKAGES)
	@bash bench/fetch_rocksdbjni.sh build

install: lib tool
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/tkv $(DESTDIR)$(PREFIX)/bin/
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
