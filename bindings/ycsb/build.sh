#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh -- builds the YCSB binding's Maven project (bindings/ycsb/pom.xml)
# into build/ycsb/: compiles, runs its JUnit tests (the codec, the tierkv
# binding, both bindings in one JVM), packages tierkv-ycsb.jar and copies the
# YCSB client and its dependencies into build/ycsb/lib/. Maven fetches what
# ~/.m2 lacks from Maven Central (site.ycsb:core, rocksdbjni, junit, plugins).
#
# usage: TIERKV_JNI=/abs/path/libtierkvjni.so bash bindings/ycsb/build.sh
#   TIERKV_JNI   the JNI glue (make jni builds it); its path is
#                written into the jar
#   SKIP_TESTS=1 package without running the JUnit tests
#   MVN          the Maven command (default mvn)
# Prints Maven's log only on failure, else the tests' summary lines.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MVN=${MVN:-mvn}
: "${TIERKV_JNI:?set TIERKV_JNI to the absolute path of libtierkvjni.so}"
[ -f "$TIERKV_JNI" ] || { echo "build.sh: $TIERKV_JNI does not exist (make jni)" >&2; exit 1; }
command -v "$MVN" >/dev/null 2>&1 || { echo "build.sh: $MVN not found (make deps installs maven)" >&2; exit 1; }

mkdir -p "$ROOT/build/ycsb"
LOG="$ROOT/build/ycsb/maven.log"
args=(-B -ntp package "-Dtierkv.jni.path=$TIERKV_JNI")
[ "${SKIP_TESTS:-0}" = 1 ] && args+=(-DskipTests)
echo "ycsb: building bindings/ycsb with Maven (log: build/ycsb/maven.log)"
if ! (cd "$HERE" && nice -n 10 "$MVN" "${args[@]}") >"$LOG" 2>&1; then
    grep -E "Tests run:|FAIL|ERROR" "$LOG" | head -n 40 >&2 || true
    echo "---- last lines of build/ycsb/maven.log ----" >&2
    tail -n 40 "$LOG" >&2
    echo "ycsb: Maven build failed" >&2
    exit 1
fi
grep -E "^\[(INFO|WARNING)\] Tests run:" "$LOG" | grep -v " in site" || true
echo "ycsb: built build/ycsb/tierkv-ycsb.jar (glue $TIERKV_JNI)"
