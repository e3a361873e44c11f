#!/bin/sh
# test-plugin-sdk.sh - the third-party plugin SDK, end to end (TAP):
# stage `make install DESTDIR=...`, build examples/plugin-example out of tree
# against the staged install through pkg-config only, install it, register it
# through a backends.d/ drop-in file of a temporary configuration, and run its
# demo: a graph mixing the plugin's ops with ops only the CPU has.

n=0
failed=0
ok() { # ok COND-STATUS "description"
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
diag() { sed 's/^/# /' "$@"; }

: "${GGMLC_BUILDDIR:?run through make check}"
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
if ! command -v "$PKG_CONFIG" >/dev/null 2>&1 || ! command -v "${CC:-cc}" >/dev/null 2>&1; then
    echo "1..0 # SKIP pkg-config or a C compiler is missing"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-plugin-sdk.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage

# 1. stage an install of this build tree (MAKEFLAGS of the outer make would confuse the inner one)
# (under the build tree's install lock, shared with test-cmake-package.sh: two installs at
# once race in libtool's relinking; the relinking rewrites plugins/*/.libs/*.so in place, so
# the other tests load copies of the plugins, tests/plugin-copies/, see tests/Makefile.inc)
flock "$GGMLC_BUILDDIR/.install-lock" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -C "$GGMLC_BUILDDIR" install DESTDIR="$stage" >"$tmp/install.log" 2>&1
st=$?
pc=$(find "$stage" -name ggmlc.pc | head -n 1)
[ $st -eq 0 ] && [ -n "$pc" ]
ok $? "make install DESTDIR stages the library, headers and ggmlc.pc"
[ $st -eq 0 ] || diag "$tmp/install.log"
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$stage"
plugindir=$($PKG_CONFIG --variable=plugindir ggmlc)
configdir=$($PKG_CONFIG --variable=configdir ggmlc)
abi=$($PKG_CONFIG --variable=plugin_abi ggmlc)
libdir=$($PKG_CONFIG --variable=libdir ggmlc)
header=$($PKG_CONFIG --variable=includedir ggmlc)/ggmlc/ggmlc-plugin.h
major=$(sed -n 's/^#define GGMLC_PLUGIN_ABI_MAJOR *\([0-9]*\).*/\1/p' "$header")
minor=$(sed -n 's/^#define GGMLC_PLUGIN_ABI_MINOR *\([0-9]*\).*/\1/p' "$header")
[ -f "$plugindir/cpu.so" ] && [ -d "$configdir/backends.d" ] && [ -n "$major" ] && [ "$abi" = "$major.$minor" ]
ok $? "ggmlc.pc gives plugindir ($plugindir), configdir and plugin_abi ($abi, as in the installed ggmlc-plugin.h)"

# 2. build the example out of tree, warnings as errors, against the staged install only
cp -R "$srcdir/examples/plugin-example" "$tmp/src"
chmod -R u+w "$tmp/src"
make -C "$tmp/src" CFLAGS="-O2 -Wall -Wextra -Wno-unused-parameter -Werror" >"$tmp/build.log" 2>&1
ok $? "the example plugin and its demo build with pkg-config alone"
[ -f "$tmp/src/example.so" ] || diag "$tmp/build.log"

# 3. its install target puts the plugin in plugindir and the drop-in in backends.d
#    (without the sysroot, pkg-config names the real folders; DESTDIR stages them)
env -u PKG_CONFIG_SYSROOT_DIR make -C "$tmp/src" install DESTDIR="$stage" >"$tmp/inst2.log" 2>&1
[ -f "$plugindir/example.so" ] && [ -f "$configdir/backends.d/example.ini" ]
ok $? "make install DESTDIR puts example.so in plugindir and example.ini in backends.d/"

# 4. a temporary configuration: the staged CPU plugin, and the example's drop-in file
#    (absolute library paths: the staged library looks for bare names in the real plugin folder)
mkdir -p "$tmp/etc/backends.d"
printf '[ggmlc]\nbackends = cpu\n\n[backend.cpu]\nlibrary = %s/cpu.so\nthreads = 2\n' "$plugindir" >"$tmp/etc/ggmlc.ini"
sed "s|^library *=.*|library = $plugindir/example.so|" "$configdir/backends.d/example.ini" >"$tmp/etc/backends.d/example.ini"
export GGMLC_CONFIG="$tmp/etc/ggmlc.ini" LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
info=$(find "$stage" -name ggmlc-info -type f | head -n 1)
"$info" >"$tmp/info.log" 2>&1
grep -q "example  *loaded" "$tmp/info.log" && grep -q "EXAMPLE0" "$tmp/info.log"
st=$?
ok $st "ggmlc-info lists the example backend, registered by the drop-in file, and its device"
[ $st -eq 0 ] || diag "$tmp/info.log"

# 5. the demo: scheduler, CPU reference, plain graph_compute on the plugin
"$tmp/src/demo" >"$tmp/demo.log" 2>&1
st=$?
diag "$tmp/demo.log"
[ $st -eq 0 ] && grep -q "sched vs cpu: max difference 0$" "$tmp/demo.log"
ok $? "the scheduler's result equals a CPU-only run"
grep -q "sched: status 0, splits 4, copies 6$" "$tmp/demo.log"
ok $? "4 splits (example, CPU, example, CPU) and 6 copies"
grep -q "node s SQR on CPU" "$tmp/demo.log" && grep -q "node out SUM_ROWS on CPU" "$tmp/demo.log" &&
    grep -q "node a ADD on example" "$tmp/demo.log" && grep -q "node r RELU on example" "$tmp/demo.log" &&
    grep -q "node m MUL on example" "$tmp/demo.log"
ok $? "unsupported ops (SQR, SUM_ROWS) ran on the CPU, ADD/RELU/MUL on the plugin"
grep -q "graph_compute on example: status 0, max difference 0$" "$tmp/demo.log"
ok $? "ggml_backend_graph_compute on the plugin runs SQR and SUM_ROWS on the CPU by itself"
grep -q "example computed 6 nodes" "$tmp/demo.log"
ok $? "the plugin computed its 3 nodes in each of the two runs (get_proc_address)"

echo "1..$n"
exit $failed
