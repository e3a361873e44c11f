#!/bin/sh
# test-headers-cxx.sh - ggml's C++ users (TAP): every public header, ggml-cpp.h
# included, compiles with g++ (C++11 and C++17, -Wall -Wextra -Werror) and a C++
# program using each RAII alias of ggml-cpp.h links against this build tree's
# libggmlc and runs (tests/compat-cxx.cpp checks its own values).

: "${GGMLC_BUILDDIR:?run through make check}"
srcdir=$(cd "${GGMLC_TEST_DATA:?run through make check}/.." && pwd)
CXX_BIN=${CXX_FOR_TESTS:-g++}
if ! command -v "$CXX_BIN" >/dev/null 2>&1; then
    echo "1..0 # SKIP no C++ compiler ($CXX_BIN)"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-cxx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
failed=0
ok() { # ok STATUS "description" [log]
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; [ -n "$3" ] && sed 's/^/# /' "$3"; fi
}

flags="-Wall -Wextra -Werror -I$srcdir/include"
libs="-L$GGMLC_BUILDDIR/.libs -lggmlc -Wl,-rpath,$GGMLC_BUILDDIR/.libs"
echo "1..5"
# each header on its own, first in its translation unit: none relies on another being included before it
rm -f "$tmp/alone.log"
for h in ggml.h ggml-alloc.h ggml-backend.h ggml-cpu.h ggml-opt.h gguf.h ggml-cpp.h ggmlc.h ggmlc-nn.h ggmlc-plugin.h; do
    echo "#include <$h>" | "$CXX_BIN" -std=c++11 $flags -fsyntax-only -x c++ - >>"$tmp/alone.log" 2>&1 || echo "# $h" >>"$tmp/alone.log"
done
! grep -q . "$tmp/alone.log"
ok $? "each public header, ggml-cpp.h included, compiles alone as C++" "$tmp/alone.log"
for std in c++11 c++17; do
    "$CXX_BIN" -std=$std $flags -fsyntax-only "$srcdir/tests/compat-cxx.cpp" >"$tmp/$std.log" 2>&1
    ok $? "the public headers and ggml-cpp.h compile as -std=$std with warnings as errors" "$tmp/$std.log"
done
# $LDFLAGS as a third party would link: under tools/sanitize-check.sh it carries the
# sanitizer runtime, which must come first in a program using a sanitized libggmlc.
"$CXX_BIN" -std=c++17 $flags -O1 "$srcdir/tests/compat-cxx.cpp" $libs ${LDFLAGS:-} -o "$tmp/compat-cxx" >"$tmp/link.log" 2>&1
ok $? "a C++ program using ggml-cpp.h links against libggmlc" "$tmp/link.log"
"$tmp/compat-cxx" >"$tmp/run.log" 2>&1
st=$?
[ $st -eq 0 ] && ! grep -q "^not ok" "$tmp/run.log"
ok $? "it runs: contexts, backends, buffers, allocator, scheduler and GGUF owned by the aliases, ssm_scan old and new (14 checks)" "$tmp/run.log"
exit $failed
