#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fetch_rocksdbjni.sh -- puts RocksDB's release build where tkv_bench's "rocksdb"
# engine looks for it: BUILD_DIR/deps/librocksdbjni-linux64.so, taken from the
# Maven jar org.rocksdb:rocksdbjni:10.10.1 (classifier linux64). That shared
# library exports RocksDB's whole C API and needs no JVM. Also writes
# BUILD_DIR/deps/rocksdbjni.version ("10.10.1").
#
# usage: bash bench/fetch_rocksdbjni.sh [BUILD_DIR]     (default: build)
#
# Does nothing if the library is already there. Never fails: on any problem it
# prints a warning and exits 0, and the bench falls back to "rocksdb-deb".
set -u

VERSION=10.10.1
ARTIFACT="org.rocksdb:rocksdbjni:${VERSION}:jar:linux64"
JAR_NAME="rocksdbjni-${VERSION}-linux64.jar"
JAR_URL="https://repo1.maven.org/maven2/org/rocksdb/rocksdbjni/${VERSION}/${JAR_NAME}"
SO_NAME=librocksdbjni-linux64.so

BUILD_DIR=${1:-build}
DEPS="${BUILD_DIR}/deps"
SO="${DEPS}/${SO_NAME}"

# warn_exit -- the one way out on failure: a clear warning, status 0.
warn_exit() {
    echo "fetch_rocksdbjni.sh: rocksdb (release build) unavailable: $*; the bench will use rocksdb-deb" >&2
    exit 0
}

if [ -s "$SO" ]; then
    [ -s "${DEPS}/rocksdbjni.version" ] || echo "$VERSION" > "${DEPS}/rocksdbjni.version"
    exit 0
fi

mkdir -p "$DEPS" || warn_exit "cannot create $DEPS"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocksdbjni.XXXXXX") || warn_exit "cannot create a temporary directory"
trap 'rm -rf "$TMP"' EXIT

JAR="$TMP/$JAR_NAME"
if command -v mvn >/dev/null 2>&1; then
    echo "fetch_rocksdbjni.sh: fetching $ARTIFACT with Maven" >&2
    if ! mvn -q dependency:copy -Dartifact="$ARTIFACT" -DoutputDirectory="$TMP" >"$TMP/mvn.log" 2>&1; then
        echo "fetch_rocksdbjni.sh: mvn failed (last lines follow); trying curl" >&2
        tail -n 5 "$TMP/mvn.log" >&2
    fi
fi
if [ ! -s "$JAR" ]; then
    command -v curl >/dev/null 2>&1 || warn_exit "neither mvn nor curl could fetch $JAR_NAME"
    echo "fetch_rocksdbjni.sh: downloading $JAR_URL" >&2
    curl -fsSL --retry 3 -o "$JAR" "$JAR_URL" || warn_exit "download of $JAR_URL failed"
fi
[ -s "$JAR" ] || warn_exit "$JAR_NAME not obtained"

# Extract the one shared library from the jar (a zip file).
if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$JAR" "$SO_NAME" -d "$TMP/x" || warn_exit "unzip of $JAR_NAME failed"
elif command -v python3 >/dev/null 2>&1; then
    python3 - "$JAR" "$SO_NAME" "$TMP/x" <<'EOF' || warn_exit "extracting $SO_NAME with python3 failed"
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])
EOF
else
    warn_exit "neither unzip nor python3 is available to extract $SO_NAME"
fi
[ -s "$TMP/x/$SO_NAME" ] || warn_exit "$SO_NAME not found in $JAR_NAME"

# Move into place atomically, so a concurrent run never sees half a file.
cp "$TMP/x/$SO_NAME" "$SO.tmp.$$" && mv -f "$SO.tmp.$$" "$SO" || {
    rm -f "$SO.tmp.$$"
    warn_exit "cannot install $SO"
}
echo "$VERSION" > "${DEPS}/rocksdbjni.version" || warn_exit "cannot write ${DEPS}/rocksdbjni.version"
echo "fetch_rocksdbjni.sh: installed $SO (RocksDB $VERSION, rocksdbjni release build)" >&2
exit 0
